package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// deadPID is the PID of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestCleanupDeadFixture: on a v2 fixture tree, a dead session's empty
// cgroups go, deepest first; a cgroup of it that still lists a process
// stays, with its parents; a live session and a directory not named by a
// PID are left alone; a dry run removes nothing.
func TestCleanupDeadFixture(t *testing.T) {
	root, ops := v2Fixture(t)
	alive := func(pid int) bool { return pid == 100 }
	mk := func(name string) string {
		cg, err := NewWithOps(root, name, Limits{CPUCores: 0.25, MemoryBytes: 64 << 20}, ops)
		if err != nil {
			t.Fatal(err)
		}
		return cg.dirs[0]
	}
	gone := []string{mk("slowlab/200/run-1/app"), mk("slowlab/200/run-1/proxy"), mk("slowlab/200/run-2/app")}
	held := mk("slowlab/300/run-1/app")
	if err := os.WriteFile(filepath.Join(held, "cgroup.procs"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := []string{mk("slowlab/100/run-1/app"), mk("slowlab/test-run/app"), held}

	dry, err := CleanupDead(root, CleanupOptions{Alive: alive, Ops: ops, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range gone {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("dry run removed %s", d)
		}
	}
	if len(dry) != 9 { // 200: 2 runs, 3 roles, the session; 300: run, role, the session
		t.Errorf("dry run listed %d leftovers, want 9: %+v", len(dry), dry)
	}

	got, err := CleanupDead(root, CleanupOptions{Alive: alive, Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(gone, filepath.Join(root, "slowlab", "200")) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s of a dead session left behind", d)
		}
	}
	for _, d := range append(kept, filepath.Join(root, "slowlab", "300")) {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
	i := slices.IndexFunc(got, func(l Leftover) bool { return l.Dir == held })
	if i < 0 || got[i].Removed() || !slices.Equal(got[i].Pids, []int{4242}) || got[i].Session != 300 {
		t.Errorf("held cgroup reported as %+v, want kept with pid 4242 of session 300", got)
	}
}

// TestCleanupDeadRealCgroups: on the machine's real hierarchies, the
// cgroups a SIGKILLed session left under slowlab/<its pid> are removed in
// every hierarchy, and this (live) session's are not.
func TestCleanupDeadRealCgroups(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "not root: the real cgroup cleanup test needs root")
	dead := strconv.Itoa(deadPID(t))
	var dirs []string
	for _, role := range []string{"app", "proxy", "loadgen"} {
		cg, err := New(DefaultRoot, filepath.Join("slowlab", dead, "run-1", role), testLimits[role])
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, cg.dirs...)
	}
	live, err := New(DefaultRoot, filepath.Join("slowlab", strconv.Itoa(os.Getpid()), "cleanup-test", "app"), testLimits["app"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Remove() })

	got, err := CleanupDead(DefaultRoot, CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", d, err)
		}
		if _, err := os.Stat(filepath.Dir(filepath.Dir(d))); !os.IsNotExist(err) {
			t.Errorf("session dir %s left behind", filepath.Dir(filepath.Dir(d)))
		}
	}
	for _, d := range live.dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("live session's %s removed", d)
		}
	}
	for _, l := range got {
		if l.Session == os.Getpid() || !l.Removed() && slices.Contains(dirs, l.Dir) {
			t.Errorf("leftover %+v", l)
		}
	}
}
