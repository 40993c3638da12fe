package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

var (
	once            sync.Once
	debPath, debDir string
	debErr          error
)

// buildOnce builds the package once for the tests (a static build takes a
// while the first time).
func buildOnce(t *testing.T) string {
	t.Helper()
	once.Do(func() {
		if debDir, debErr = os.MkdirTemp("", "slowlab-deb-"); debErr == nil {
			debPath, debErr = build("../..", debDir, "0.0~test")
		}
	})
	if debErr != nil {
		t.Fatal(debErr)
	}
	return debPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if debDir != "" {
		os.RemoveAll(debDir)
	}
	os.Exit(code)
}

// The .deb installs with dpkg, its exporter runs and serves /metrics (under
// systemd where systemd runs, else from the unit's own ExecStart line), and
// it is removed again, the configuration file last, on purge.
func TestDebInstallsRunsAndIsRemoved(t *testing.T) {
	slowlabtest.RequireRoot(t, "dpkg -i")
	dpkg := slowlabtest.RequireTool(t, "dpkg")
	// dpkg takes one package operation at a time on a machine: a second
	// suite running beside this one (make test-loaded beside make test)
	// waits here until this one's package is purged (the cleanups run
	// last-registered first, so the lock goes last) instead of failing on
	// dpkg's lock or on the package this one installed.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "slowlab-package-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() }) // closing releases the lock
	if out, err := exec.Command(dpkg, "-s", "slowlab").CombinedOutput(); err == nil && strings.Contains(string(out), "Status: install ok installed") {
		t.Fatal("a slowlab package is installed on this machine already: this test will not replace it")
	}
	deb := buildOnce(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run(dpkg, "-i", deb)
	purged := false
	t.Cleanup(func() {
		if !purged {
			exec.Command(dpkg, "--purge", "slowlab").Run()
		}
	})
	if st := run(dpkg, "-s", "slowlab"); !strings.Contains(st, "Status: install ok installed") || !strings.Contains(st, "Version: 0.0~test") {
		t.Fatalf("dpkg -s:\n%s", st)
	}
	for path, mode := range map[string]os.FileMode{BinPath: 0o755, ExporterBinPath: 0o755, UnitPath: 0o644, ConfigPath: 0o644, DefaultsPath: 0o644} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v; want %v", path, err, fi, mode)
		}
	}
	if conf := run(dpkg, "-s", "slowlab"); !strings.Contains(conf, ConfigPath) || !strings.Contains(conf, DefaultsPath) {
		t.Errorf("%s and %s are not both conffiles:\n%s", ConfigPath, DefaultsPath, conf)
	}
	// The binaries know the package's version.
	for _, cmd := range [][]string{{ExporterBinPath, "--version"}, {BinPath, "exporter", "--version"}} {
		if out := run(cmd...); !strings.Contains(out, "version 0.0~test") {
			t.Errorf("%v: %q, want the package version 0.0~test", cmd, out)
		}
	}

	if _, err := os.Stat("/run/systemd/system"); err == nil {
		scrapeUnderSystemd(t, run)
	} else {
		t.Log("systemd is not running here: starting the unit's ExecStart line directly")
		scrapeExecStart(t)
	}

	run(dpkg, "-r", "slowlab")
	for _, bin := range []string{BinPath, ExporterBinPath} {
		if _, err := os.Stat(bin); !os.IsNotExist(err) {
			t.Errorf("%s after dpkg -r: %v", bin, err)
		}
	}
	if _, err := os.Stat(ConfigPath); err != nil {
		t.Errorf("%s gone after dpkg -r, want it kept until purge: %v", ConfigPath, err)
	}
	run(dpkg, "--purge", "slowlab")
	purged = true
	if _, err := os.Stat(ConfigPath); !os.IsNotExist(err) {
		t.Errorf("%s after purge: %v", ConfigPath, err)
	}
}

// scrapeUnderSystemd starts the installed unit and scrapes it on :9817.
func scrapeUnderSystemd(t *testing.T, run func(...string) string) {
	run("systemctl", "daemon-reload")
	run("systemctl", "start", "slowlab-exporter.service")
	t.Cleanup(func() { exec.Command("systemctl", "stop", "slowlab-exporter.service").Run() })
	var body string
	slowlabtest.WaitFor(t, "the unit's /metrics", func() bool {
		body = get(t, "127.0.0.1:9817")
		return body != ""
	}, func() string { return run("systemctl", "status", "slowlab-exporter.service") })
	checkMetrics(t, body)
}

// scrapeExecStart runs the installed unit's ExecStart line, listening on a
// free loopback port instead of :9817, and scrapes it.
func scrapeExecStart(t *testing.T) {
	unit, err := os.ReadFile(UnitPath)
	if err != nil {
		t.Fatal(err)
	}
	// systemd expands an unquoted $ARGS into words, from the
	// EnvironmentFile the package ships.
	defaults, err := os.ReadFile(DefaultsPath)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(defaults), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = strings.Trim(v, `"`)
		}
	}
	var argv []string
	for _, line := range strings.Split(string(unit), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			for _, w := range strings.Fields(rest) {
				if name, ok := strings.CutPrefix(w, "$"); ok {
					argv = append(argv, strings.Fields(env[name])...)
					continue
				}
				argv = append(argv, w)
			}
		}
	}
	if len(argv) < 2 || argv[0] != ExporterBinPath {
		t.Fatalf("ExecStart %v: want %s first", argv, ExporterBinPath)
	}
	for i, a := range argv {
		if a == "--web.listen-address" && i+1 < len(argv) {
			argv[i+1] = "127.0.0.1:0"
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready listen=")
	if err != nil || !ok {
		t.Fatalf("%v: no ready line (%q, %v); stderr: %s", argv, line, err, stderr.String())
	}
	checkMetrics(t, get(t, addr))
}

func get(t *testing.T, addr string) string {
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, b)
	}
	return string(b)
}

// checkMetrics wants the default config's dynamic groups walked without
// error.
func checkMetrics(t *testing.T, body string) {
	t.Helper()
	if !strings.Contains(body, `slowlab_exporter_collector_success{collector="cgroup-re"} 1`) || !strings.Contains(body, "slowlab_exporter_dynamic_groups ") {
		t.Errorf("/metrics of the installed exporter lacks the dynamic-group metrics:\n%s", body)
	}
}

// The package holds exactly the two binaries, the unit and the config.
func TestDebContents(t *testing.T) {
	dpkgDeb := slowlabtest.RequireTool(t, "dpkg-deb")
	deb := buildOnce(t)
	out, err := exec.Command(dpkgDeb, "-c", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if p := strings.TrimPrefix(f[len(f)-1], "."); !strings.HasSuffix(p, "/") {
			paths = append(paths, p)
		}
	}
	want := []string{BinPath, ExporterBinPath, UnitPath, ConfigPath, DefaultsPath}
	for _, w := range want {
		found := false
		for _, p := range paths {
			found = found || p == w
		}
		if !found {
			t.Errorf("%s not in the package: %v", w, paths)
		}
	}
	if len(paths) != len(want) {
		t.Errorf("package files %v, want %v", paths, want)
	}
	if filepath.Ext(deb) != ".deb" {
		t.Errorf("file %s", deb)
	}
}

// The unit's hardening, as systemd-analyze scores it offline: 2.5 or lower
// ("OK"). The score can fail: without its hardening the unit scores worse.
func TestUnitHardening(t *testing.T) {
	analyze := slowlabtest.RequireTool(t, "systemd-analyze")
	score := func(unit string) float64 {
		t.Helper()
		out, _ := exec.Command(analyze, "security", "--offline=yes", "--no-pager", unit).CombinedOutput()
		m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security %s: no overall level:\n%s", unit, out)
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	unit := "../../deploy/systemd/slowlab-exporter.service"
	if got := score(unit); got > 2.5 {
		t.Errorf("%s: exposure %.1f, want 2.5 or lower", unit, got)
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	var bare []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "SystemCall") && !strings.HasPrefix(line, "Protect") && !strings.HasPrefix(line, "Restrict") {
			bare = append(bare, line)
		}
	}
	weak := filepath.Join(t.TempDir(), "slowlab-exporter.service")
	if err := os.WriteFile(weak, []byte(strings.Join(bare, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := score(weak); got <= 2.5 {
		t.Errorf("the unit without its Protect*, Restrict* and SystemCall* lines scores %.1f: the check cannot fail", got)
	}
}
