package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

var (
	once   sync.Once
	debs   []string
	debDir string
	debErr error
)

// buildOnce returns this machine's packages for the tests, version
// testVersion: the exporter's .deb, then the lab's. The release the
// release tests check has them (writeDebs, as build makes them), so they
// are that release's, not a second build of the same binaries; only on a
// machine outside ReleaseArches are they built here, once.
func buildOnce(t *testing.T) (exporterDeb, labDeb string) {
	t.Helper()
	if !testing.Short() && slices.Contains(ReleaseArches, runtime.GOARCH) {
		dir := releaseOnce(t)
		deb := func(name string) string { return filepath.Join(dir, name+"_"+testVersion+"_"+runtime.GOARCH+".deb") }
		return deb(ExporterPackage), deb(LabPackage)
	}
	once.Do(func() {
		if debDir, debErr = os.MkdirTemp("", "slowlab-deb-"); debErr == nil {
			debs, debErr = build("../..", debDir, testVersion)
		}
	})
	if debErr != nil {
		t.Fatal(debErr)
	}
	return debs[0], debs[1]
}

// enabledLink is where deb-systemd-helper enables the unit.
const enabledLink = "/etc/systemd/system/multi-user.target.wants/slowlab-exporter.service"

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{debDir, relDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
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
	for _, name := range []string{ExporterPackage, LabPackage} {
		if out, err := exec.Command(dpkg, "-s", name).CombinedOutput(); err == nil && strings.Contains(string(out), "Status: install ok installed") {
			t.Fatalf("a %s package is installed on this machine already: this test will not replace it", name)
		}
	}
	exporterDeb, labDeb := buildOnce(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	purged := false
	t.Cleanup(func() {
		if !purged {
			exec.Command(dpkg, "--purge", ExporterPackage, LabPackage).Run()
		}
	})
	// The exporter alone: its package needs nothing of the lab's.
	run(dpkg, "-i", exporterDeb)
	if st := run(dpkg, "-s", ExporterPackage); !strings.Contains(st, "Status: install ok installed") || !strings.Contains(st, "Version: "+testVersion) ||
		!strings.Contains(st, ConfigPath) || !strings.Contains(st, DefaultsPath) {
		t.Fatalf("dpkg -s %s: want installed, version %s, %s and %s conffiles:\n%s", ExporterPackage, testVersion, ConfigPath, DefaultsPath, st)
	}
	for path, mode := range map[string]os.FileMode{ExporterBinPath: 0o755, UnitPath: 0o644, ConfigPath: 0o644, DefaultsPath: 0o644} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v; want %v", path, err, fi, mode)
		}
	}
	if _, err := os.Stat(BinPath); !os.IsNotExist(err) {
		t.Errorf("%s with the exporter's package alone: %v; want it in the lab's package", BinPath, err)
	}
	// The dashboards and rules, as committed.
	for _, f := range shareFiles {
		got, err := os.ReadFile(ShareDir + "/" + f)
		want, _ := os.ReadFile(filepath.Join("../..", f))
		if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s/%s: %v, %d bytes; want the repository's %s (%d bytes)", ShareDir, f, err, len(got), f, len(want))
		}
	}
	// postinst enabled the unit (deb-systemd-helper, where systemd runs or not).
	if target, err := os.Readlink(enabledLink); err != nil || target != UnitPath {
		t.Errorf("after install: %s -> %q (%v), want the unit enabled", enabledLink, target, err)
	}
	if out := run(ExporterBinPath, "--version"); !strings.Contains(out, "version "+testVersion+" ") {
		t.Errorf("%s --version: %q, want the package version %s", ExporterBinPath, out, testVersion)
	}

	if _, err := os.Stat("/run/systemd/system"); err == nil {
		scrapeUnderSystemd(t, run)
	} else {
		t.Log("systemd is not running here: starting the unit's ExecStart line directly")
		scrapeExecStart(t)
	}
	// An upgrade (the same version again) runs postinst with the old
	// version: the unit stays enabled.
	run(dpkg, "-i", exporterDeb)
	if _, err := os.Readlink(enabledLink); err != nil {
		t.Errorf("after reinstall: %v, want the unit still enabled", err)
	}

	// The lab's package beside it.
	run(dpkg, "-i", labDeb)
	if out := run(BinPath, "exporter", "--version"); !strings.Contains(out, "version "+testVersion+" ") {
		t.Errorf("%s exporter --version: %q, want the package version %s", BinPath, out, testVersion)
	}
	run(dpkg, "-r", LabPackage)
	if _, err := os.Stat(BinPath); !os.IsNotExist(err) {
		t.Errorf("%s after dpkg -r %s: %v", BinPath, LabPackage, err)
	}
	if _, err := os.Stat(ExporterBinPath); err != nil {
		t.Errorf("removing the lab removed the exporter: %v", err)
	}

	run(dpkg, "-r", ExporterPackage)
	for _, path := range []string{ExporterBinPath, ShareDir} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s after dpkg -r: %v", path, err)
		}
	}
	if _, err := os.Stat(ConfigPath); err != nil {
		t.Errorf("%s gone after dpkg -r, want it kept until purge: %v", ConfigPath, err)
	}
	run(dpkg, "--purge", ExporterPackage, LabPackage)
	purged = true
	for _, path := range []string{ConfigPath, DefaultsPath} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s after purge: %v", path, err)
		}
	}
	if _, err := os.Lstat(enabledLink); !os.IsNotExist(err) {
		t.Errorf("%s after purge: %v; want no link left (dangling: the unit is gone)", enabledLink, err)
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

// shareFiles are the dashboards and rules a release ships, below the
// tarball's directory and the exporter package's ShareDir.
var shareFiles = []string{"dashboards/slowlab-experiment.json", "dashboards/slowlab-production.json",
	"dashboards/provisioning/dashboards.yml", "dashboards/provisioning/datasource.yml", "alerts/slowlab.rules.yml", "alerts/runbook.md"}

// wantDebFiles are the files package name holds, sorted: the exporter's its
// binary, unit, config, defaults, dashboards and rules; the lab's its
// binary; each its copyright, changelog and lintian overrides.
func wantDebFiles(name string) []string {
	files := []string{BinPath}
	if name == ExporterPackage {
		files = []string{ExporterBinPath, UnitPath, ConfigPath, DefaultsPath}
		for _, f := range shareFiles {
			files = append(files, ShareDir+"/"+f)
		}
	}
	files = append(files, "/usr/share/doc/"+name+"/copyright", "/usr/share/doc/"+name+"/changelog.gz", "/usr/share/lintian/overrides/"+name)
	return slices.Sorted(slices.Values(files))
}

// debFiles lists the files (not the directories) of deb, sorted.
func debFiles(dpkgDeb, deb string) ([]string, error) {
	out, err := exec.Command(dpkgDeb, "-c", deb).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb -c %s: %w", deb, err)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if p := strings.TrimPrefix(f[len(f)-1], "."); !strings.HasSuffix(p, "/") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// Each package holds exactly its files (wantDebFiles), the exporter's with
// the maintainer scripts.
func TestDebContents(t *testing.T) {
	dpkgDeb := slowlabtest.RequireTool(t, "dpkg-deb")
	exporterDeb, labDeb := buildOnce(t)
	for _, tc := range []struct {
		deb, name string
		scripts   bool
	}{{exporterDeb, ExporterPackage, true}, {labDeb, LabPackage, false}} {
		paths, err := debFiles(dpkgDeb, tc.deb)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantDebFiles(tc.name); !slices.Equal(paths, want) {
			t.Errorf("%s: files %v, want %v", tc.name, paths, want)
		}
		info, err := exec.Command(dpkgDeb, "-I", tc.deb).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, script := range []string{"postinst", "prerm", "postrm"} {
			if got := strings.Contains(string(info), " "+script+" "); got != tc.scripts {
				t.Errorf("%s: %s in the package %t, want %t", tc.name, script, got, tc.scripts)
			}
		}
		if !strings.Contains(string(info), "Package: "+tc.name) {
			t.Errorf("%s: dpkg-deb -I:\n%s", tc.deb, info)
		}
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

// unitCaps reads the unit's AmbientCapabilities as setpriv's list
// (+sys_ptrace,+dac_read_search) and checks the bounding set and
// NoNewPrivileges say the same.
func unitCaps(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/systemd/slowlab-exporter.service")
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			kv[k] = v
		}
	}
	if kv["AmbientCapabilities"] != kv["CapabilityBoundingSet"] || kv["NoNewPrivileges"] != "yes" || kv["DynamicUser"] != "yes" {
		t.Fatalf("unit: ambient %q, bounding %q, NoNewPrivileges %q, DynamicUser %q; want the same capabilities, no new privileges, a dynamic user",
			kv["AmbientCapabilities"], kv["CapabilityBoundingSet"], kv["NoNewPrivileges"], kv["DynamicUser"])
	}
	var caps []string
	for _, c := range strings.Fields(kv["AmbientCapabilities"]) {
		caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	return strings.Join(caps, ",")
}

// TestUnitCapabilitiesWithoutSystemd runs the standalone exporter as the
// unit does where no systemd runs to apply it: as an unprivileged user
// (nobody, as a DynamicUser is one) with only the unit's capabilities
// (ambient, inheritable and bounding set) and no new privileges, applied
// with setpriv, watching this root-owned test process (its fds, sockets
// and a temp file) and its memory cgroup: every collector succeeds. The
// same user without the capabilities fails the fd collectors: the check
// can fail. The unit's system-call filter is not applied here (no
// systemd; seccomp has no tool of its own on these machines).
func TestUnitCapabilitiesWithoutSystemd(t *testing.T) {
	slowlabtest.RequireRoot(t, "setpriv to another user")
	setpriv := slowlabtest.RequireTool(t, "setpriv")
	caps := unitCaps(t)
	bin, dir := buildPublicExporter(t)
	// A temp file this process holds open and unlinked, as NGINX does, in
	// a temp dir of the group.
	tmpDir := filepath.Join(dir, "proxy_temp")
	if err := os.Mkdir(tmpDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(tmpDir, "0000000001"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(make([]byte, 64<<10))
	os.Remove(f.Name())
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A cgroup of its own, with a CPU and a memory limit to read.
	cg, err := cgroup.New(cgroup.DefaultRoot, "slowlab-test-unit-"+strconv.Itoa(os.Getpid()), cgroup.Limits{CPUCores: 0.5, MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("remove the test cgroup: %v", err)
		}
	})
	self := strconv.Itoa(os.Getpid())
	args := []string{"--web.listen-address", "127.0.0.1:0", "--group", "self=pid:" + self, "--collector.tempfiles.dir", tmpDir,
		"--group", "cg=cgroup:" + cg.Path()}
	success := func(capList string) map[string]string {
		t.Helper()
		addr, stop := startAsNobody(t, setpriv, capList, bin, args...)
		defer stop()
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^slowlab_exporter_collector_success\{collector="([^"]+)"\} (\S+)$`).FindAllStringSubmatch(get(t, addr), -1) {
			got[m[1]] = m[2]
		}
		return got
	}
	with := success("," + caps)
	t.Logf("with %s: %v", caps, with)
	for _, c := range []string{"cgroup", "process", "tempfiles", "sockets"} {
		if with[c] != "1" {
			t.Errorf("collector %s: success %q as nobody with the unit's capabilities, want 1", c, with[c])
		}
	}
	without := success("")
	if without["sockets"] != "0" || without["tempfiles"] != "0" {
		t.Errorf("as nobody without capabilities: %v; want the fd collectors failing (the check can fail)", without)
	}
}

// buildPublicExporter builds the standalone exporter into a fresh
// directory every user can enter and returns the binary and the directory.
func buildPublicExporter(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "slowlab-exporter")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/slowlab-exporter").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// startAsNobody starts the exporter bin with args as the unit would run it
// where no systemd does: as nobody with only the capabilities capList
// (",+cap,..." or "") and no new privileges, applied with setpriv. It
// returns the address it listens on and a stop that kills it by PID.
func startAsNobody(t *testing.T, setpriv, capList, bin string, args ...string) (addr string, stop func()) {
	t.Helper()
	cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs",
		"--inh-caps=-all" + capList, "--ambient-caps=-all" + capList, "--bounding-set=-all" + capList, bin}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	var stderr slowlabtest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready listen=")
	if err != nil || !ok {
		stop()
		t.Fatalf("no ready line (%q, %v); stderr %s", line, err, stderr.String())
	}
	return addr, stop
}

// blockedSockets is a Python program of two processes: a writer (the
// child) whose peer never reads, blocked in sendto once the buffers are
// full, and a reader (the parent) blocked in recvfrom on a connection
// whose client sends nothing, as sync workers held by a slow reader and
// by an idle client. It prints "WRITER READER" (their PIDs) and blocks.
const blockedSockets = `
import os, socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(8)
w = socket.socket(); w.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384); w.connect(l.getsockname())
idle = socket.create_connection(l.getsockname())
peers = [l.accept()[0] for _ in range(2)]
quiet = [p for p in peers if p.getpeername() == idle.getsockname()][0]
pid = os.fork()
if pid == 0:
    w.sendall(b"x" * (256 << 20))
    os._exit(0)
print(pid, os.getpid(), flush=True)
quiet.recv(1)
`

// TestUnitCapabilitiesSeeBlockedSockets: with only the unit's
// capabilities the exporter cannot read /proc/PID/stack (it needs
// CAP_SYS_ADMIN), and current kernels name both waits wait_woken in
// /proc/PID/wchan; it still counts a worker blocked writing to a client
// that does not read in sk_stream_wait_memory and one blocked reading from
// a client that sends nothing in sk_wait_data, the wait channels
// SlowlabWorkersSaturated and SlowlabWorkersWaitingForClients (production)
// count: real processes, blocked in real sockets.
func TestUnitCapabilitiesSeeBlockedSockets(t *testing.T) {
	slowlabtest.RequireRoot(t, "setpriv to another user")
	setpriv := slowlabtest.RequireTool(t, "setpriv")
	python := slowlabtest.RequireTool(t, "python3")
	caps := unitCaps(t)
	bin, _ := buildPublicExporter(t)
	py := exec.Command(python, "-c", blockedSockets)
	out, _ := py.StdoutPipe()
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	var writer, reader int
	t.Cleanup(func() {
		if writer > 0 {
			syscall.Kill(writer, syscall.SIGKILL)
		}
		py.Process.Kill()
		py.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscan(line, &writer, &reader); err != nil || serr != nil {
		t.Fatalf("python: %q, %v, %v", line, err, serr)
	}
	addr, stop := startAsNobody(t, setpriv, ","+caps, bin, "--web.listen-address", "127.0.0.1:0",
		"--group", "writer=pid:"+strconv.Itoa(writer), "--group", "reader=pid:"+strconv.Itoa(reader))
	defer stop()
	const (
		writing = `slowlab_process_wchan{group="writer",wchan="sk_stream_wait_memory"} 1`
		reading = `slowlab_process_wchan{group="reader",wchan="sk_wait_data"} 1`
	)
	var metrics string
	if !slowlabtest.Eventually(func() bool {
		metrics = get(t, addr)
		return strings.Contains(metrics, writing) && strings.Contains(metrics, reading)
	}) {
		var wchans []string
		for _, l := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(l, "slowlab_process_wchan{") && !strings.HasSuffix(l, " 0") {
				wchans = append(wchans, l)
			}
		}
		stack, stackErr := os.ReadFile(fmt.Sprintf("/proc/%d/stack", writer))
		t.Fatalf("as nobody with %s: want %q and %q; wait channels:\n%s\n(the writer's stack, read as root: %q, %v)",
			caps, writing, reading, strings.Join(wchans, "\n"), stack, stackErr)
	}
}

// TestLintian: both packages are lintian clean but for the tags their
// overrides name (each with its reason in deploy/debian). The check can
// fail: the exporter's package rebuilt without its overrides file shows
// the overridden tags (lintian run on it for those tags only: the rest of
// its checks ran on the package itself just before).
func TestLintian(t *testing.T) {
	lintian := slowlabtest.RequireTool(t, "lintian")
	dpkgDeb := slowlabtest.RequireTool(t, "dpkg-deb")
	exporterDeb, labDeb := buildOnce(t)
	tags := func(args ...string) []string {
		t.Helper()
		out, _ := exec.Command(lintian, append([]string{"--tag-display-limit", "0"}, args...)...).CombinedOutput()
		var found []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") {
				found = append(found, line)
			}
		}
		return found
	}
	if got := tags(exporterDeb, labDeb); len(got) > 0 {
		t.Errorf("lintian, beyond the overrides:\n%s", strings.Join(got, "\n"))
	}
	overridden := overriddenTags(t, "../../deploy/debian/"+ExporterPackage+".lintian-overrides")
	if !slices.Contains(overridden, "statically-linked-binary") {
		t.Fatalf("%s overrides %q: want statically-linked-binary among them", ExporterPackage, overridden)
	}
	tree := filepath.Join(t.TempDir(), "tree")
	if out, err := exec.Command(dpkgDeb, "-R", exporterDeb, tree).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -R: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(tree, "usr/share/lintian/overrides", ExporterPackage)); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(t.TempDir(), "bare.deb")
	if out, err := exec.Command(dpkgDeb, "--root-owner-group", "-b", tree, bare).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -b: %v\n%s", err, out)
	}
	got := tags("--tags", strings.Join(overridden, ","), bare)
	for _, tag := range overridden {
		if !slices.ContainsFunc(got, func(l string) bool { f := strings.Fields(l); return len(f) > 2 && f[2] == tag }) {
			t.Errorf("lintian on the package without its overrides: %q; want the overridden tag %s back", got, tag)
		}
	}
}

// overriddenTags are the tags a lintian overrides file names ("PACKAGE:
// TAG [CONTEXT]" lines; # starts a comment), each once.
func overriddenTags(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, rest, ok := strings.Cut(line, ": ")
		fields := strings.Fields(rest)
		if !ok || len(fields) == 0 {
			t.Fatalf("%s: %q is not PACKAGE: TAG", path, line)
		}
		if !slices.Contains(tags, fields[0]) {
			tags = append(tags, fields[0])
		}
	}
	return tags
}
