package alerts

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// fullTempFS starts a process in a mount namespace of its own (unshare
// -m) with dir on a 1 MiB tmpfs filled to about 96%; with holdTemp it
// also holds an unlinked file open there, as NGINX holds a temp file. It
// returns the process's PID once the tmpfs is full; the process is ended
// by PID when the test ends (and sleeps 5 minutes at most).
func fullTempFS(t *testing.T, dir string, holdTemp bool) int {
	t.Helper()
	script := `mount -t tmpfs -o size=1m slowlab-test "$1" && head -c 1000000 /dev/zero > "$1/fill" || exit 1
if [ "$2" = hold ]; then exec 3>"$1/proxy-temp" && rm "$1/proxy-temp" || exit 1; fi
echo ready
exec sleep 300`
	hold := "none"
	if holdTemp {
		hold = "hold"
	}
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", dir, hold)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("unshare -m with a full tmpfs on %s: %q, %v: %s", dir, line, err, stderr.String())
	}
	return cmd.Process.Pid
}

// TestProxyTempFilesystemFullOnRealPrometheus runs the production rule in
// a real Prometheus scraping the exporter (every `for` cut to 2 s). Two
// groups name no temp dirs and get the configuration's default one, each
// process seeing it on a tmpfs of its own mount namespace 96% full: group
// app holds no file there, group proxy holds an open temp file. The alert
// fires for proxy and not for app, whose filesystem is as full.
func TestProxyTempFilesystemFullOnRealPrometheus(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts Prometheus")
	slowlabtest.RequireRoot(t, "mounting a tmpfs in a mount namespace")
	slowlabtest.RequireTool(t, "unshare")
	dir := filepath.Join(t.TempDir(), "temp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	app, proxy := fullTempFS(t, dir, false), fullTempFS(t, dir, true)
	e, err := exporter.New(exporter.Config{TempDirs: []string{dir}, Groups: []exporter.Group{
		{Name: "app", Selectors: []string{fmt.Sprintf("pid:%d", app)}},
		{Name: "proxy", Selectors: []string{fmt.Sprintf("pid:%d", proxy)}},
	}}, exporter.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	prom := rulesPrometheus(t, srv.URL, nil)

	// alert is the alert's series for group, pending or firing.
	alert := func(group, state string) string {
		return fmt.Sprintf(`ALERTS{alertname="SlowlabProxyTempFilesystemFull",group=%q,alertstate=~%q}`, group, state)
	}
	slowlabtest.WaitFor(t, "SlowlabProxyTempFilesystemFull firing for group proxy", func() bool {
		v := prom.Query(alert("proxy", "firing"))
		return len(v) > 0
	}, func() string {
		return fmt.Sprintf("available/size %v, temp files %v", prom.Query(`slowlab_proxy_temp_fs_avail_bytes / slowlab_proxy_temp_fs_size_bytes`),
			prom.Query(`slowlab_proxy_temp_files`))
	})
	full := prom.Query(`slowlab_proxy_temp_fs_avail_bytes{group="app"} / slowlab_proxy_temp_fs_size_bytes{group="app"} < 0.1`)
	if len(full) != 1 {
		t.Fatalf("group app's temp filesystem available/size below 0.1: %v; want its full tmpfs seen", full)
	}
	if v := prom.Query(`slowlab_proxy_temp_files{group="app"}`); len(v) != 1 || v[0].Value != 0 {
		t.Errorf("group app's temp files: %v, want 0", v)
	}
	if v := prom.Query(alert("app", ".*")); len(v) > 0 {
		t.Errorf("SlowlabProxyTempFilesystemFull for group app, which holds no temp file (%.1f%% available): %v", 100*float64(full[0].Value), v)
	}
	t.Logf("group app: %.1f%% available; group proxy: %v", 100*float64(full[0].Value), prom.Query(alert("proxy", "firing")))
}
