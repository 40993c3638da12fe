package exporter

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// fixtureConfig is the group config the end-to-end tests run on fixtures.
func fixtureConfig(t testing.TB) Config {
	tmp, err := filepath.Abs("testdata/fixtures/tmp/nginx-proxy")
	if err != nil {
		t.Fatal(err)
	}
	// The proxy's error log: lines written before the exporter started
	// are not counted, so the counter reads 0.
	errorLog, err := filepath.Abs("testdata/errorlog/nginx-tmpfs.log")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Groups: []Group{
		{Name: "app", Selectors: []string{"cgroup:slowlab/app"}},
		{Name: "proxy", Selectors: []string{"cgroup:/slowlab/proxy/", "port:8080"}, TempDirs: []string{tmp}, ErrorLogs: []string{errorLog}},
		{Name: "loadgen", Selectors: []string{"cgroup:slowlab/loadgen", "cmdline:.*slowlab loadgen.*"}},
		{Name: "workers", Selectors: []string{"tree:200"}},
		{Name: "gone", Selectors: []string{"pid:999", "comm:no-such-process"}},
		// A dynamic group: one per cgroup under slowlab/ whose name starts
		// with a, labelled role="app".
		{Name: "roles", Selectors: []string{`cgroup-re:slowlab/(?P<role>a[^/]*)`}, GroupName: "role-${role}"},
	}}
}

// fixtureSockets returns a sock_diag stand-in that reads
// testdata/fixtures/sockets.txt.
func fixtureSockets(t testing.TB) func(uint8, []uint16) ([]tcpSocket, error) {
	data, err := os.ReadFile("testdata/fixtures/sockets.txt")
	if err != nil {
		t.Fatal(err)
	}
	return func(family uint8, _ []uint16) ([]tcpSocket, error) {
		var out []tcpSocket
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "#") {
				continue
			}
			var fam, state, port uint64
			var s tcpSocket
			if _, err := fmt.Sscan(sc.Text(), &fam, &state, &s.inode, &port, &s.rqueue, &s.wqueue, &s.notsent, &s.lastDataRecv); err != nil {
				return nil, fmt.Errorf("sockets.txt: %q: %w", sc.Text(), err)
			}
			s.state, s.localPort = uint8(state), uint16(port)
			if uint8(fam) == family {
				out = append(out, s)
			}
		}
		return out, nil
	}
}

func fixtureOptions(t testing.TB, cgroups string) Options {
	return Options{
		ProcFS:   "testdata/fixtures/proc",
		CgroupFS: filepath.Join("testdata/fixtures", cgroups),
		dumpTCP:  fixtureSockets(t),
	}
}

var durationLine = regexp.MustCompile(`(?m)^(slowlab_exporter_collector_duration_seconds\{[^}]*\}) \S+$`)

// TestEndToEnd serves /metrics on the fixture trees and diffs the whole
// output against testdata/e2e-*.metrics (go test -run EndToEnd -update
// rewrites them). Durations are the only values masked.
func TestEndToEnd(t *testing.T) {
	slowlabtest.Timing(t)
	// statfs of a temp dir through a fixture process's /proc/PID/root: a
	// fixed 64 MiB filesystem with 48 MiB available (the fixture tree has
	// no mounts of its own; the host's would change the golden output).
	orig := statfsFunc
	t.Cleanup(func() { statfsFunc = orig })
	statfsFunc = func(path string, st *syscall.Statfs_t) error {
		if !strings.HasPrefix(path, "testdata/fixtures/proc/") {
			return syscall.ENOENT
		}
		st.Bsize, st.Blocks, st.Bavail = 4096, 16384, 12288
		return nil
	}
	for _, version := range []string{"v1", "v2", "hybrid"} {
		t.Run(version, func(t *testing.T) {
			e, err := New(fixtureConfig(t), fixtureOptions(t, "cgroup-"+version), nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(e.Handler())
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /metrics: status %d, err %v", resp.StatusCode, err)
			}
			got := durationLine.ReplaceAll(body, []byte("$1 <duration>"))
			golden := filepath.Join("testdata", "e2e-"+version+".metrics")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run EndToEnd -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("/metrics differs from %s (go test -run EndToEnd -update rewrites it):\n%s", golden, lineDiff(string(want), string(got)))
			}
			promtoolCheck(t, body)
		})
	}
}

// promtoolCheck runs `promtool check metrics` when promtool is installed;
// in CI (CI=true) a missing promtool fails the test.
func promtoolCheck(t *testing.T, metrics []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not on PATH; CI must install it (Debian package prometheus)")
		}
		t.Log("promtool not on PATH: skipping promtool check metrics")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(metrics)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// lineDiff lists lines only in want (-) or only in got (+), in order.
func lineDiff(want, got string) string {
	w := strings.Split(want, "\n")
	g := strings.Split(got, "\n")
	inW := map[string]bool{}
	for _, l := range w {
		inW[l] = true
	}
	inG := map[string]bool{}
	for _, l := range g {
		inG[l] = true
	}
	var b strings.Builder
	for _, l := range w {
		if !inG[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !inW[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// TestEndToEndOpenMetrics checks the content negotiation: a scraper that
// asks for OpenMetrics gets it, with counters typed as such.
func TestEndToEndOpenMetrics(t *testing.T) {
	slowlabtest.Timing(t)
	e, err := New(fixtureConfig(t), fixtureOptions(t, "cgroup-v2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q, want OpenMetrics", ct)
	}
	for _, want := range []string{
		"# TYPE slowlab_cgroup_cpu_usage_seconds counter",
		`slowlab_cgroup_cpu_usage_seconds_total{group="app"} 12.5`,
		"# EOF",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("OpenMetrics output lacks %q", want)
		}
	}
}
