package cgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// copyTree copies the regular files of src into dst (created).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fakeCgroupOps behaves like a cgroup filesystem on a plain tree: mkdir
// fills the new directory with the interface files of template(dir), rmdir
// removes it unless it has child directories or processes.
func fakeCgroupOps(t *testing.T, template func(dir string) string) Ops {
	return Ops{
		Mkdir: func(dir string) error {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			copyTree(t, template(dir), dir)
			return nil
		},
		Rmdir: func(dir string) error {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if e.IsDir() {
					return &fs.PathError{Op: "rmdir", Path: dir, Err: syscall.ENOTEMPTY}
				}
			}
			if pids, _ := readPids(dir); len(pids) > 0 {
				return &fs.PathError{Op: "rmdir", Path: dir, Err: syscall.EBUSY}
			}
			return os.RemoveAll(dir)
		},
	}
}

func v2Fixture(t *testing.T) (string, Ops) {
	root := t.TempDir()
	copyTree(t, filepath.Join("testdata", "cgroup-v2", "root"), root)
	child := filepath.Join("testdata", "cgroup-v2", "child")
	return root, fakeCgroupOps(t, func(string) string { return child })
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := readTrim(t, filepath.Join(dir, name)); got != v {
			t.Errorf("%s = %q, want %q", filepath.Join(dir, name), got, v)
		}
	}
}

func TestNewV2WritesLimits(t *testing.T) {
	root, ops := v2Fixture(t)
	app, err := NewWithOps(root, "slowlab/run1/app", testLimits["app"], ops)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := NewWithOps(root, "slowlab/run1/proxy", testLimits["proxy"], ops)
	if err != nil {
		t.Fatal(err)
	}
	// Parents enable cpu and memory for their children; the root is only read.
	wantFiles(t, root, map[string]string{"cgroup.subtree_control": "cpu memory pids\n"})
	wantFiles(t, filepath.Join(root, "slowlab"), map[string]string{"cgroup.subtree_control": "+cpu +memory"})
	wantFiles(t, filepath.Join(root, "slowlab/run1"), map[string]string{"cgroup.subtree_control": "+cpu +memory"})
	wantFiles(t, filepath.Join(root, "slowlab/run1/app"), map[string]string{
		"cpu.max": "2500 10000", "memory.max": "134217728", "memory.swap.max": "0"})
	wantFiles(t, filepath.Join(root, "slowlab/run1/proxy"), map[string]string{
		"cpu.max": "2000 10000", "memory.max": "100663296", "memory.swap.max": "0"})

	if app.Path() != "slowlab/run1/app" {
		t.Errorf("Path = %q", app.Path())
	}
	if got, want := app.ProcsFiles(), []string{filepath.Join(root, "slowlab/run1/app/cgroup.procs")}; !reflect.DeepEqual(got, want) {
		t.Errorf("procsFiles = %v, want %v", got, want)
	}
	if err := app.AddProc(4242); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, filepath.Join(root, "slowlab/run1/app"), map[string]string{"cgroup.procs": "4242"})

	// The fake kernel keeps a cgroup with processes: Remove waits, then
	// reports them instead of killing anything. (A wait of 200 ms, not 2
	// s: the process never leaves.)
	defer func(w time.Duration) { removeWait = w }(removeWait)
	removeWait = 200 * time.Millisecond
	start := time.Now()
	if err := app.Remove(); err == nil || !strings.Contains(err.Error(), "processes [4242] are still in it") {
		t.Fatalf("Remove with a process = %v", err)
	}
	if d := time.Since(start); d < removeWait {
		t.Errorf("Remove gave up after %s, want it to wait for exiting processes", d)
	}
	os.WriteFile(filepath.Join(root, "slowlab/run1/app/cgroup.procs"), nil, 0o644)
	if err := app.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "slowlab/run1/proxy")); err != nil {
		t.Fatalf("removing app touched its sibling: %v", err)
	}
	if err := proxy.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := proxy.Remove(); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("%s left behind", e.Name())
		}
	}
}

func TestNewV2Partial(t *testing.T) {
	root, ops := v2Fixture(t)
	// No swap accounting in this kernel, no CPU limit wanted.
	noSwap := t.TempDir()
	copyTree(t, filepath.Join("testdata", "cgroup-v2", "child"), noSwap)
	os.Remove(filepath.Join(noSwap, "memory.swap.max"))
	ops = fakeCgroupOps(t, func(string) string { return noSwap })
	cg, err := NewWithOps(root, "slowlab/x", Limits{MemoryBytes: 64 << 20}, ops)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove()
	wantFiles(t, filepath.Join(root, "slowlab/x"), map[string]string{"cpu.max": "max 100000\n", "memory.max": "67108864"})
}

func TestNewCgroupErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cg     string
		limits Limits
		setup  func(root string, ops *Ops)
		want   string
	}{
		{name: "quota below 1ms", cg: "slowlab/a", limits: Limits{CPUCores: 0.05},
			want: "cgroup slowlab/a: CPU limit 0.05 cores: below the kernel's minimum quota of 1ms per 10ms period (0.10 cores)"},
		{name: "negative memory", cg: "slowlab/a", limits: Limits{MemoryBytes: -1},
			want: "cgroup slowlab/a: memory limit -1 bytes: must be 0 (unlimited) or more"},
		{name: "escaping name", cg: "../a", want: `cgroup name "../a": want a clean relative path such as slowlab/run/app`},
		{name: "absolute name", cg: "/a", want: `cgroup name "/a": want a clean relative path such as slowlab/run/app`},
		{name: "root without memory", cg: "slowlab/a", limits: Limits{CPUCores: 1},
			setup: func(root string, _ *Ops) {
				os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("cpu pids\n"), 0o644)
			},
			want: `enables "cpu pids" for child cgroups, want cpu and memory`},
		{name: "not root", cg: "slowlab/a", limits: Limits{CPUCores: 1},
			setup: func(_ string, ops *Ops) {
				ops.Mkdir = func(dir string) error { return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EACCES} }
			},
			want: "permission denied: cgroups cannot be written here (they need root and a writable cgroup filesystem); --no-limits runs without limits"},
		{name: "in use", cg: "slowlab/a", limits: Limits{CPUCores: 1},
			setup: func(root string, ops *Ops) {
				ops.Mkdir(filepath.Join(root, "slowlab"))
				ops.Mkdir(filepath.Join(root, "slowlab/a"))
				os.WriteFile(filepath.Join(root, "slowlab/a/cgroup.procs"), []byte("77\n"), 0o644)
			},
			want: "holds processes [77]: another run is using it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, ops := v2Fixture(t)
			if tc.setup != nil {
				tc.setup(root, &ops)
			}
			_, err := NewWithOps(root, tc.cg, tc.limits, ops)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if tc.name == "not root" && !errors.Is(err, ErrUnavailable) {
				t.Errorf("err does not wrap ErrUnavailable: %v", err)
			}
			if tc.name != "in use" {
				if _, err := os.Stat(filepath.Join(root, "slowlab")); err == nil {
					t.Error("a failed New left slowlab/ behind")
				}
			}
		})
	}
}

// A leftover empty cgroup from a crashed run is replaced, so its counters
// start from zero.
func TestNewCgroupReplacesStale(t *testing.T) {
	root, ops := v2Fixture(t)
	stale := filepath.Join(root, "slowlab/run1/app")
	for _, d := range []string{"slowlab", "slowlab/run1", "slowlab/run1/app"} {
		ops.Mkdir(filepath.Join(root, d))
	}
	os.WriteFile(filepath.Join(stale, "stale-marker"), nil, 0o644)
	cg, err := NewWithOps(root, "slowlab/run1/app", Limits{CPUCores: 0.25}, ops)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove()
	if _, err := os.Stat(filepath.Join(stale, "stale-marker")); err == nil {
		t.Error("stale cgroup reused")
	}
	wantFiles(t, stale, map[string]string{"cpu.max": "2500 10000"})
}

// v1Fixture builds a v1 tree like the lab machine's: separate cpu, cpuacct
// and memory hierarchies plus a unified v2 mount without controllers.
func v1Fixture(t *testing.T, memsw bool) (string, Ops) {
	root := t.TempDir()
	files := map[string]map[string]string{
		"cpu":     {"cgroup.procs": "", "cpu.cfs_period_us": "100000\n", "cpu.cfs_quota_us": "-1\n", "cpu.stat": "nr_periods 0\n"},
		"cpuacct": {"cgroup.procs": "", "cpuacct.usage": "0\n"},
		"memory":  {"cgroup.procs": "", "memory.limit_in_bytes": "9223372036854771712\n"},
		"pids":    {"cgroup.procs": ""},
		"unified": {"cgroup.procs": "", "cgroup.controllers": ""},
	}
	if memsw {
		files["memory"]["memory.memsw.limit_in_bytes"] = "9223372036854771712\n"
	}
	templates := t.TempDir()
	for h, fsMap := range files {
		for _, dir := range []string{filepath.Join(root, h), filepath.Join(templates, h)} {
			os.MkdirAll(dir, 0o755)
			for name, v := range fsMap {
				os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644)
			}
		}
	}
	return root, fakeCgroupOps(t, func(dir string) string {
		rel, _ := filepath.Rel(root, dir)
		return filepath.Join(templates, strings.Split(rel, string(filepath.Separator))[0])
	})
}

func TestNewV1WritesEveryHierarchy(t *testing.T) {
	for _, memsw := range []bool{true, false} {
		root, ops := v1Fixture(t, memsw)
		cg, err := NewWithOps(root, "slowlab/run1/app", testLimits["app"], ops)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, h := range []string{"cpu", "cpuacct", "memory"} {
			want = append(want, filepath.Join(root, h, "slowlab/run1/app/cgroup.procs"))
		}
		if got := cg.ProcsFiles(); !reflect.DeepEqual(got, want) {
			t.Errorf("procsFiles = %v, want %v (cpu, cpuacct, memory; not pids or unified)", got, want)
		}
		wantFiles(t, filepath.Join(root, "cpu/slowlab/run1/app"), map[string]string{"cpu.cfs_period_us": "10000", "cpu.cfs_quota_us": "2500"})
		mem := map[string]string{"memory.limit_in_bytes": "134217728"}
		if memsw {
			mem["memory.memsw.limit_in_bytes"] = "134217728"
		}
		wantFiles(t, filepath.Join(root, "memory/slowlab/run1/app"), mem)
		if _, err := os.Stat(filepath.Join(root, "memory/slowlab/run1/app/memory.memsw.limit_in_bytes")); memsw != (err == nil) {
			t.Errorf("memsw=%t: memory.memsw.limit_in_bytes created or missing: %v", memsw, err)
		}
		if err := cg.Remove(); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"cpu", "cpuacct", "memory"} {
			if _, err := os.Stat(filepath.Join(root, h, "slowlab")); err == nil {
				t.Errorf("%s/slowlab left behind", h)
			}
		}
	}
}

func TestDetectCgroups(t *testing.T) {
	v1, _ := v1Fixture(t, true)
	v1Only := t.TempDir()
	copyTree(t, v1, v1Only)
	os.RemoveAll(filepath.Join(v1Only, "unified"))
	comounted := t.TempDir()
	os.MkdirAll(filepath.Join(comounted, "cpu,cpuacct"), 0o755)
	os.WriteFile(filepath.Join(comounted, "cpu,cpuacct", "cgroup.procs"), nil, 0o644)
	os.Symlink("cpu,cpuacct", filepath.Join(comounted, "cpu"))
	os.Symlink("cpu,cpuacct", filepath.Join(comounted, "cpuacct"))
	for _, tc := range []struct {
		root string
		want Mode
	}{
		{filepath.Join("testdata", "cgroup-v2", "root"), V2},
		{v1, Hybrid},
		{v1Only, V1},
		{comounted, V1},
	} {
		got, err := Detect(tc.root)
		if err != nil || got.Mode != tc.want {
			t.Errorf("Detect(%s) = %q, %v; want %q", tc.root, got.Mode, err, tc.want)
		}
	}
	l, _ := Detect(comounted)
	if cpu, acct := l.V1["cpu"], l.V1["cpuacct"]; cpu != acct || filepath.Base(cpu) != "cpu,cpuacct" {
		t.Errorf("co-mounted cpu,cpuacct resolved to %q and %q, want one hierarchy", cpu, acct)
	}
	if _, err := Detect(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no cgroup v1 or v2 hierarchy") {
		t.Errorf("empty root: %v", err)
	}
}

func TestLimits(t *testing.T) {
	d := testLimits
	for comp, want := range map[string]string{"app": "0.25 CPU / 128 MiB", "proxy": "0.2 CPU / 96 MiB", "loadgen": "0.2 CPU / 128 MiB"} {
		if got := d[comp].String(); got != want {
			t.Errorf("%s limits %q, want %q", comp, got, want)
		}
	}
	if got := (Limits{}).String(); got != "unlimited CPU / unlimited memory" {
		t.Errorf("zero Limits = %q", got)
	}
	for cores, quota := range map[float64]time.Duration{0.25: 2500 * time.Microsecond, 0.2: 2000 * time.Microsecond, 1.5: 15 * time.Millisecond, 0.1: time.Millisecond} {
		if got := (Limits{CPUCores: cores}).quota(); got != quota {
			t.Errorf("quota of %v cores = %s, want %s", cores, got, quota)
		}
	}
}

// The exec wrapper writes the process's own PID to every cgroup.procs file
// before exec, and fails before exec when it cannot.
func TestCgroupExecArgv(t *testing.T) {
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "a.procs"), filepath.Join(dir, "b procs")}
	for _, f := range files {
		os.WriteFile(f, nil, 0o644)
	}
	c, err := startChild(context.Background(), "wrapped", filepath.Join(dir, "log"),
		ExecArgv(files, []string{"/bin/sh", "-c", "exec sleep 30", "--", "ignored"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop(time.Second)
	if c.ready["pid"] != strconv.Itoa(c.pid()) {
		t.Errorf("ready pid %q, want %d", c.ready["pid"], c.pid())
	}
	for _, f := range files {
		if got := readTrim(t, f); got != strconv.Itoa(c.pid())+"\n" {
			t.Errorf("%s = %q, want the child's pid %d", f, got, c.pid())
		}
	}
	var comm []byte
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if comm, _ = os.ReadFile("/proc/" + strconv.Itoa(c.pid()) + "/comm"); string(comm) == "sleep\n" {
			break
		}
	}
	if string(comm) != "sleep\n" {
		t.Errorf("child runs %q, want sleep (exec in the same process)", comm)
	}

	_, err = startChild(context.Background(), "wrapped", filepath.Join(dir, "log2"),
		ExecArgv([]string{filepath.Join(dir, "missing", "cgroup.procs")}, []string{"/bin/echo", "ready", "too early"}), nil)
	if err == nil || !strings.Contains(err.Error(), "exit status 125") {
		t.Fatalf("unwritable cgroup.procs: err = %v, want exit status 125 before argv runs", err)
	}
}

// TestRealCgroupThrottles limits a CPU burner to 0.25 core in a real cgroup:
// the quota reads back, throttling is counted, usage stays near the quota,
// and Remove leaves nothing behind in any hierarchy.
func TestRealCgroupThrottles(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "not root: the real cgroup test needs root")
	layout, err := Detect(DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	mode := layout.Mode
	b := make([]byte, 4)
	rand.Read(b)
	name := "slowlab/test-" + hex.EncodeToString(b) + "/burn"
	cg, err := New(DefaultRoot, name, Limits{CPUCores: 0.25, MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dirs := append([]string(nil), cg.dirs...)
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("Remove: %v", err)
		}
		for _, d := range dirs {
			for _, p := range []string{d, filepath.Dir(d)} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s left behind", p)
				}
			}
		}
	})
	burner, err := startChild(context.Background(), "burner", filepath.Join(t.TempDir(), "log"),
		ExecArgv(cg.ProcsFiles(), []string{"/bin/sh", "-c", "while :; do :; done"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { burner.stop(time.Second) }) // before Remove: cleanups run last-in first-out

	cpu := cg.ctrl["cpu"]
	if mode == V2 {
		wantFiles(t, cpu, map[string]string{"cpu.max": "2500 10000\n"})
	} else {
		wantFiles(t, cpu, map[string]string{"cpu.cfs_quota_us": "2500\n", "cpu.cfs_period_us": "10000\n"})
	}
	for _, d := range dirs {
		if pids, _ := readPids(d); !reflect.DeepEqual(pids, []int{burner.pid()}) {
			t.Errorf("%s holds %v, want the burner %d", d, pids, burner.pid())
		}
	}
	// Wall time is read outside the usage reads, so a stall of this test
	// can only make the rate come out low; the kernel enforces the upper
	// bound whatever the load, while other load can starve the burner, so
	// the lower bound only catches a quota in the wrong unit.
	t0 := time.Now()
	s0, u0 := cpuStat(t, cg), cpuUsage(t, cg)
	for deadline := time.Now().Add(60 * time.Second); cpuStat(t, cg)["nr_throttled"] < s0["nr_throttled"]+100 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	s1, u1 := cpuStat(t, cg), cpuUsage(t, cg)
	t1 := time.Now()
	cores := (u1 - u0).Seconds() / t1.Sub(t0).Seconds()
	t.Logf("%s: nr_throttled %d -> %d over %s, usage %.3f cores", mode, s0["nr_throttled"], s1["nr_throttled"], t1.Sub(t0).Round(time.Millisecond), cores)
	if s1["nr_throttled"] < s0["nr_throttled"]+100 {
		t.Errorf("nr_throttled did not rise by 100 periods in 60 s: %d -> %d", s0["nr_throttled"], s1["nr_throttled"])
	}
	if cores < 0.02 || cores > 0.3 {
		t.Errorf("burner used %.3f cores, want at most the 0.25 quota", cores)
	}
	// The real kernel takes the quota lifted and set again.
	if err := cg.LimitCPU(0); err != nil {
		t.Fatal(err)
	}
	if mode == V2 {
		wantFiles(t, cpu, map[string]string{"cpu.max": "max 10000\n"})
	} else {
		wantFiles(t, cpu, map[string]string{"cpu.cfs_quota_us": "-1\n"})
	}
	if err := cg.LimitCPU(0.5); err != nil {
		t.Fatal(err)
	}
	if mode == V2 {
		wantFiles(t, cpu, map[string]string{"cpu.max": "5000 10000\n"})
	} else {
		wantFiles(t, cpu, map[string]string{"cpu.cfs_quota_us": "5000\n"})
	}
}

// A cgroup made without a CPU limit gets one from LimitCPU, and loses it
// again with 0, on both layouts; a quota the kernel would refuse is an
// error that names the cgroup, and writes nothing.
func TestLimitCPULater(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		var root string
		var ops Ops
		if v2 {
			root, ops = v2Fixture(t)
		} else {
			root, ops = v1Fixture(t, true)
		}
		cg, err := NewWithOps(root, "slowlab/run1/app", Limits{MemoryBytes: 64 << 20}, ops)
		if err != nil {
			t.Fatal(err)
		}
		dir, file := filepath.Join(root, "cpu/slowlab/run1/app"), "cpu.cfs_quota_us"
		if v2 {
			dir, file = filepath.Join(root, "slowlab/run1/app"), "cpu.max"
		}
		// The fixture's mkdir writes the kernel's defaults: no quota.
		wantFiles(t, dir, map[string]string{file: map[bool]string{false: "-1\n", true: "max 100000\n"}[v2]})
		if err := cg.LimitCPU(0.25); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "2500", true: "2500 10000"}[v2]
		wantFiles(t, dir, map[string]string{file: want})
		if err := cg.LimitCPU(0.001); err == nil || !strings.Contains(err.Error(), "slowlab/run1/app") || !strings.Contains(err.Error(), "minimum quota") {
			t.Errorf("v2=%t: LimitCPU(0.001) = %v, want the kernel's minimum named", v2, err)
		}
		wantFiles(t, dir, map[string]string{file: want})
		if err := cg.LimitCPU(0); err != nil {
			t.Fatal(err)
		}
		wantFiles(t, dir, map[string]string{file: map[bool]string{false: "-1", true: "max 10000"}[v2]})
	}
}

// cpuStat reads the cgroup's cpu.stat.
func cpuStat(t *testing.T, cg *Cgroup) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, line := range strings.Split(readTrim(t, filepath.Join(cg.ctrl["cpu"], "cpu.stat")), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			m[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return m
}

// cpuUsage is the cgroup's CPU time: v1 cpuacct.usage, v2 cpu.stat usage_usec.
func cpuUsage(t *testing.T, cg *Cgroup) time.Duration {
	t.Helper()
	if acct := filepath.Join(cg.ctrl["cpuacct"], "cpuacct.usage"); cg.ctrl["cpuacct"] != cg.ctrl["cpu"] || isFile(acct) {
		ns, err := strconv.ParseInt(strings.TrimSpace(readTrim(t, acct)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ns)
	}
	return time.Duration(cpuStat(t, cg)["usage_usec"]) * time.Microsecond
}

// The lab's own process goes into a limited cgroup for a run and comes back
// to exactly the cgroups it was in.
func TestLimitSelfAndBack(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "writing cgroups needs root")
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	name := "slowlab-test-self-" + strconv.Itoa(os.Getpid())
	s, err := limitSelf(DefaultRoot, name, Limits{CPUCores: 0.5, MemoryBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	during, _ := os.ReadFile("/proc/self/cgroup")
	if !strings.Contains(string(during), "/"+name) {
		s.Release()
		t.Fatalf("not moved: %s", during)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile("/proc/self/cgroup")
	if string(after) != string(before) {
		t.Errorf("cgroups after release:\n%s\nwant\n%s", after, before)
	}
	for _, d := range s.Cgroup().Dirs() {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists", d)
		}
	}
}

// Two runs in one process (tests in parallel, as TestExamplesRun's), the
// second prepared while the first is entered: the second waits for the
// first's Release, each goes back where the process was when it entered,
// and the process ends in exactly the cgroups it started in with both
// cgroups removed. Before, the second remembered the first's cgroup as
// home, failed to go back to it once it was removed, and stayed in its
// own, limited, for the rest of the process (the cgroups the lab
// package's tests left behind).
func TestSelfTwoRunsInOneProcess(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "writing cgroups needs root")
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	name := "slowlab-test-self2-" + strconv.Itoa(os.Getpid())
	a, err := PrepareSelf(DefaultRoot, name+"-a", Limits{CPUCores: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Enter(); err != nil {
		t.Fatal(err)
	}
	// b is prepared while a is entered, as a parallel run's instruments are.
	b, err := PrepareSelf(DefaultRoot, name+"-b", Limits{CPUCores: 0.5})
	if err != nil {
		a.Release()
		t.Fatal(err)
	}
	entered := make(chan error, 1)
	go func() { entered <- b.Enter() }()
	select {
	case err := <-entered:
		a.Release()
		b.Release()
		t.Fatalf("b entered (%v) while a was in: one process, one cgroup", err)
	case <-time.After(100 * time.Millisecond):
		// Not a deadline the test waits for: a check that b is still
		// waiting; it enters once a releases, below.
	}
	if err := a.Release(); err != nil {
		t.Errorf("a release: %v", err)
	}
	if err := <-entered; err != nil {
		t.Fatalf("b enter after a's release: %v", err)
	}
	if during, _ := os.ReadFile("/proc/self/cgroup"); !strings.Contains(string(during), "/"+name+"-b") {
		t.Errorf("b entered but the process is not in it:\n%s", during)
	}
	if err := b.Release(); err != nil {
		t.Errorf("b release: %v", err)
	}
	if after, _ := os.ReadFile("/proc/self/cgroup"); string(after) != string(before) {
		t.Errorf("cgroups after both runs:\n%s\nwant\n%s", after, before)
	}
	for _, s := range []*Self{a, b} {
		for _, d := range s.Cgroup().Dirs() {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("%s still exists", d)
			}
		}
	}
}

// A process started while the run is entered inherits its cgroup (as a
// parallel experiment's exporter did): Release moves it back with this
// one and removes the cgroup. Before, Remove waited for it to leave and
// failed, its error dropped by the run's deferred Stop: the cgroup stayed.
func TestSelfReleaseMovesStartedProcessBack(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "writing cgroups needs root")
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	s, err := PrepareSelf(DefaultRoot, "slowlab-test-selfchild-"+strconv.Itoa(os.Getpid()), Limits{CPUCores: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Enter(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		s.Release()
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	path := fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid)
	if in, _ := os.ReadFile(path); !strings.Contains(string(in), "/slowlab-test-selfchild-") {
		t.Fatalf("the child did not inherit the entered cgroup:\n%s", in)
	}
	if err := s.Release(); err != nil {
		t.Errorf("release with a started process in the cgroup: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("the started process's cgroups after Release:\n%s\nwant this process's before Enter:\n%s", after, before)
	}
	for _, d := range s.Cgroup().Dirs() {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists", d)
		}
	}
}

// environment.json says "none allowed" for swap only where the lab could
// write a swap limit: on v1 without memory.memsw.* a memory limit can
// spill into swap, and the record says so, with the host's swap.
func TestSwapEnforcement(t *testing.T) {
	proc := func(swapKB int) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "meminfo"), []byte(fmt.Sprintf("MemTotal: 1000 kB\nSwapTotal: %d kB\nSwapFree: %d kB\n", swapKB, swapKB)), 0o644)
		return dir
	}
	withMemsw, _ := v1Fixture(t, true)
	noMemsw, _ := v1Fixture(t, false)
	// A v2 root has system cgroups below it; the swap files show in those.
	v2, _ := v2Fixture(t)
	copyTree(t, "testdata/cgroup-v2/child", filepath.Join(v2, "system.slice"))
	v2NoSwap, _ := v2Fixture(t)
	copyTree(t, "testdata/cgroup-v2/child", filepath.Join(v2NoSwap, "system.slice"))
	os.Remove(filepath.Join(v2NoSwap, "system.slice", "memory.swap.max"))
	for _, tc := range []struct {
		root, proc, want string
	}{
		{withMemsw, proc(0), "none allowed (memory+swap limited to the memory limit); the host has no swap"},
		{noMemsw, proc(0), "not limited (the kernel does not account swap in cgroups: no memory.memsw.limit_in_bytes, swapaccount=0); the host has no swap"},
		{noMemsw, proc(2 << 20), "not limited (the kernel does not account swap in cgroups: no memory.memsw.limit_in_bytes, swapaccount=0); the host has 2048 MiB of swap"},
		{v2NoSwap, proc(0), "not limited (the kernel does not account swap in cgroups: no memory.swap.max); the host has no swap"},
		{t.TempDir(), proc(0), "not limited (no cgroup hierarchy); the host has no swap"},
	} {
		if got := SwapEnforcement(tc.root, tc.proc); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.root, got, tc.want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(v2, "*", "memory.swap.max")); len(m) > 0 {
		if got := SwapEnforcement(v2, proc(0)); got != "none allowed (memory.swap.max 0); the host has no swap" {
			t.Errorf("v2 with swap accounting: %q", got)
		}
	} else {
		t.Errorf("the v2 fixture has no cgroup with memory.swap.max")
	}
}

// A process that outgrows the cgroup's memory limit is killed by the
// kernel, and OOMKills counts it: the lab records such a run as what it
// is, not as a crash of unknown cause.
func TestRealCgroupOOMKill(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "not root: the real cgroup test needs root")
	swap := SwapEnforcement(DefaultRoot, "/proc")
	slowlabtest.Require(t, strings.HasPrefix(swap, "none allowed") || strings.HasSuffix(swap, "the host has no swap"),
		"swap: "+swap+": a process over its memory limit would swap instead of being killed")
	b := make([]byte, 4)
	rand.Read(b)
	cg, err := New(DefaultRoot, "slowlab/test-"+hex.EncodeToString(b)+"/hog", Limits{MemoryBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	if n, err := cg.OOMKills(); err != nil || n != 0 {
		slowlabtest.Require(t, !errors.Is(err, ErrNoOOMCount), "the kernel does not count OOM kills per cgroup (Linux 4.13+)")
		t.Fatalf("fresh cgroup: %d OOM kills, %v", n, err)
	}
	// The hog touches 256 MiB, one page at a time, in a limit of 32 MiB
	// (with no swap allowed where the kernel accounts it).
	hog, err := startChild(context.Background(), "hog", "", ExecArgv(cg.ProcsFiles(), []string{"/bin/sh", "-c",
		`exec awk 'BEGIN { s = "x"; while (length(s) < 268435456) s = s s; print length(s) }'`}), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-hog.done
	var ee *exec.ExitError
	if !errors.As(hog.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want SIGKILL from the OOM killer", hog.err)
	}
	if n, err := cg.OOMKills(); err != nil || n != 1 {
		t.Errorf("OOMKills() = %d, %v; want 1", n, err)
	}
}
