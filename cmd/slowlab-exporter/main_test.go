package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestServesMetrics runs the standalone exporter on a free loopback port
// with a group holding this test process: it prints its ready line and
// serves the group's metrics until its context ends, then returns 0.
func TestServesMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--web.listen-address", "127.0.0.1:0", "--group", "self=pid:" + strconv.Itoa(os.Getpid()), "--log.level", "warn"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready listen=")
	if err != nil || !ok {
		t.Fatalf("no ready line: %q, %v; stderr %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `slowlab_processes{group="self",state="sleeping"}`) ||
		!strings.Contains(string(body), `slowlab_exporter_collector_success{collector="sockets"} 1`) {
		t.Errorf("/metrics: %s\n%s", resp.Status, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after its context ended; stderr %s", code, stderr.String())
	}
}

func TestExitCodes(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "Usage: slowlab-exporter [--config FILE]"},
		{[]string{"--group", "bad"}, 2, "slowlab-exporter: --group:"},
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus (see --help)"},
		// A repeated flag's value given twice would watch one group twice.
		{[]string{"--group", "self=pid:1", "--group", "self=pid:1"}, 2, `"self=pid:1": given twice`},
		{[]string{"--collector.tempfiles.dir", "/tmp", "--collector.tempfiles.dir", "/tmp"}, 2, `"/tmp": given twice`},
		// An address another process holds is a failure, as slowlab target and proxy say it.
		{[]string{"--group", "self=pid:" + strconv.Itoa(os.Getpid()), "--web.listen-address", held.Addr().String()}, 1, "address already in use"},
		// An address that is not one is a mistake on the command line, named by its flag.
		{[]string{"--group", "self=pid:" + strconv.Itoa(os.Getpid()), "--web.listen-address", "127.0.0.1:99999"}, 2, `slowlab-exporter: --web.listen-address "127.0.0.1:99999": `},
		{[]string{"--group", "self=pid:" + strconv.Itoa(os.Getpid()), "--web.listen-address", "nonsense"}, 2, `slowlab-exporter: --web.listen-address "nonsense": `},
	} {
		var out, errw strings.Builder
		if code := run(context.Background(), tc.args, &out, &errw); code != tc.code || !strings.Contains(out.String()+errw.String(), tc.out) {
			t.Errorf("%v: exit %d, output %q %q; want %d and %q", tc.args, code, out.String(), errw.String(), tc.code, tc.out)
		}
	}
}

// TestRootsRefusedAtStart: a --path.cgroupfs that does not exist or is
// not a directory is refused at start, exit 2 naming the flag, as a
// missing --path.procfs is, rather than served with the cgroup collector
// failing every scrape; without the cgroup collector and without a group
// selecting by cgroup nothing reads it, and it is accepted. The context is
// already cancelled, so an exporter that did start returns 0 at once.
func TestRootsRefusedAtStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	missing, file := filepath.Join(dir, "missing"), filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	self := "self=pid:" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string // the whole of it, when code is 2
	}{
		{[]string{"--path.cgroupfs", missing}, 2, `slowlab-exporter: --path.cgroupfs "` + missing + `": no such file or directory` + "\n"},
		{[]string{"--path.cgroupfs", file}, 2, `slowlab-exporter: --path.cgroupfs "` + file + `": not a directory` + "\n"},
		{[]string{"--path.procfs", missing}, 2, `slowlab-exporter: --path.procfs "` + missing + `": no such file or directory` + "\n"},
		{[]string{"--path.cgroupfs", missing, "--no-collector.cgroup", "--group", "c=cgroup:/slowlab"}, 2, `slowlab-exporter: --path.cgroupfs "` + missing + `": no such file or directory` + "\n"},
		{[]string{"--path.cgroupfs", missing, "--no-collector.cgroup"}, 0, ""},
		{[]string{"--path.cgroupfs", "../../exporter/testdata/fixtures/cgroup-v2"}, 0, ""},
	} {
		var out, errw strings.Builder
		args := append([]string{"--group", self, "--web.listen-address", "127.0.0.1:0", "--log.level", "warn"}, tc.args...)
		code := run(ctx, args, &out, &errw)
		if code != tc.code || (tc.code == 2 && errw.String() != tc.stderr) || (tc.code == 0 && !strings.HasPrefix(out.String(), "ready listen=")) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out.String(), errw.String(), tc.code, tc.stderr)
		}
	}
}

// TestVersionPrintsOnlyWhatIsKnown: go test's build stamps no branch,
// build user or date and no revision; --version leaves them out, as
// slowlab version does, instead of "(branch: , revision: unknown)" and
// empty lines.
func TestVersionPrintsOnlyWhatIsKnown(t *testing.T) {
	var out, errw strings.Builder
	if code := run(context.Background(), []string{"--version"}, &out, &errw); code != 0 || !strings.HasPrefix(out.String(), "slowlab-exporter, version ") {
		t.Fatalf("exit %d: %q %q", code, out.String(), errw.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), ":") || strings.Contains(l, "branch: ,") || strings.Contains(l, "unknown") {
			t.Errorf("prints %q:\n%s", l, out.String())
		}
	}
}

// freePort is a loopback port nothing listened on a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestVersionListenAndJSONLogs builds the exporter as the package and the
// image do, with its version set by -ldflags, and checks that --version
// prints it, that it serves the same metrics (with
// slowlab_exporter_build_info carrying the version) on each of two
// --web.listen-address, shows the version on its landing page, and logs
// one JSON object a line with --log.format json.
func TestVersionListenAndJSONLogs(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs the exporter binary")
	bin := filepath.Join(t.TempDir(), "slowlab-exporter")
	const v, rev = "1.2.3-test", "0123abcd"
	build := exec.Command("go", "build", "-ldflags", "-X github.com/prometheus/common/version.Version="+v+
		" -X github.com/prometheus/common/version.Revision="+rev, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "slowlab-exporter, version "+v) || !strings.Contains(string(out), "revision: "+rev) {
		t.Fatalf("--version: %v\n%s", err, out)
	}

	a, b := freePort(t), freePort(t)
	cmd, addr, stderr := startExporter(t, bin, "--web.listen-address", a, "--web.listen-address", b, "--group", "self=pid:"+strconv.Itoa(os.Getpid()),
		"--log.format", "json")
	if addr != a {
		t.Fatalf("ready line names %s, want the first address %s", addr, a)
	}
	get := func(addr, path string) string {
		t.Helper()
		resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s%s: %s", addr, path, resp.Status)
		}
		return string(body)
	}
	for _, addr := range []string{a, b} {
		m := get(addr, "/metrics")
		if !regexp.MustCompile(`slowlab_exporter_build_info\{[^}]*revision="`+rev+`"[^}]*version="`+v+`"[^}]*\} 1`).MatchString(m) ||
			!strings.Contains(m, `goversion="go`) {
			t.Errorf("%s/metrics lacks slowlab_exporter_build_info with version %s, revision %s and goversion", addr, v, rev)
		}
		if page := get(addr, "/"); !strings.Contains(page, v) {
			t.Errorf("%s/: the landing page does not show the version %s", addr, v)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["msg"] == nil || rec["level"] == nil {
			t.Errorf("log line is not a JSON record with msg and level: %q (%v)", l, err)
		}
	}
	if !strings.Contains(stderr.String(), `"version":"`+v+`"`) {
		t.Errorf("the starting line does not log the version:\n%s", stderr.String())
	}
}

// TestReloadOnSIGHUP: SIGHUP (ExecReload) reads the config file again: a
// group added to it is served at the next scrape; a config that no longer
// loads is logged and the running one kept.
func TestReloadOnSIGHUP(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs the exporter binary")
	dir := t.TempDir()
	conf := filepath.Join(dir, "exporter.yml")
	group := func(names ...string) string {
		s := "groups:\n"
		for _, n := range names {
			s += "  - name: " + n + "\n    selectors: [\"pid:" + strconv.Itoa(os.Getpid()) + "\"]\n"
		}
		return s
	}
	if err := os.WriteFile(conf, []byte(group("one")), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "slowlab-exporter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd, addr, stderr := startExporter(t, bin, "--config", conf, "--web.listen-address", "127.0.0.1:0")
	served := func(group string) bool {
		resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `slowlab_processes{group="`+group+`"`)
	}
	if !served("one") || served("two") {
		t.Fatal("before the reload: want group one alone")
	}
	if err := os.WriteFile(conf, []byte(group("one", "two")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if !slowlabtest.Eventually(func() bool { return served("two") }) {
		t.Fatalf("group two not served after SIGHUP; stderr %s", stderr.String())
	}
	if err := os.WriteFile(conf, []byte("groups: [oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if !slowlabtest.Eventually(func() bool { return strings.Contains(stderr.String(), "reload: config kept as it was") }) {
		t.Fatalf("no log line for the broken config; stderr %s", stderr.String())
	}
	if !served("one") || !served("two") {
		t.Error("after a broken config: want the running groups kept")
	}
}

// startExporter starts the built exporter bin with args, waits for its
// ready line and returns it with the address that line names and its
// stderr; it is ended (SIGTERM) when the test ends.
func startExporter(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *slowlabtest.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, _ := cmd.StdoutPipe()
	stderr := &slowlabtest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready listen=")
	if err != nil || !ok {
		t.Fatalf("no ready line %q (%v); stderr %s", line, err, stderr.String())
	}
	return cmd, addr, stderr
}

// TestHelpShowsWchanTopDefault: --help gives --collector.process.wchan-top
// its default, as exporter/README.md's flag table does.
func TestHelpShowsWchanTopDefault(t *testing.T) {
	var out, errw strings.Builder
	if code := run(context.Background(), []string{"--help"}, &out, &errw); code != 0 {
		t.Fatalf("exit %d: %q", code, errw.String())
	}
	help := out.String()
	i := strings.Index(help, "-collector.process.wchan-top")
	if i < 0 {
		t.Fatalf("no -collector.process.wchan-top in:\n%s", help)
	}
	entry, _, _ := strings.Cut(help[i:], "\n  -")
	if !strings.Contains(entry, "-collector.process.wchan-top N") || !strings.Contains(entry, "(default 10)") {
		t.Errorf("help entry %q: want the placeholder N and (default 10)", entry)
	}
}
