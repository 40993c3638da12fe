package cgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestFoundLimitsV2 reads back, from a v2 fixture tree, the limits a
// cgroup holds and the cgroup a process is in.
func TestFoundLimitsV2(t *testing.T) {
	root, ops := v2Fixture(t)
	if _, err := NewWithOps(root, "slowlab/run1/app", testLimits["app"], ops); err != nil {
		t.Fatal(err)
	}
	layout, err := Detect(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := layout.Limits("slowlab/run1/app")
	if err != nil {
		t.Fatal(err)
	}
	if got != testLimits["app"] {
		t.Errorf("Limits = %v, want %v", got, testLimits["app"])
	}
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "4242"), 0o755)
	os.WriteFile(filepath.Join(proc, "4242", "cgroup"), []byte("0::/slowlab/run1/app\n"), 0o644)
	if p, err := layout.ProcPath(proc, 4242); err != nil || p != "/slowlab/run1/app" {
		t.Errorf("ProcPath = %q, %v; want /slowlab/run1/app", p, err)
	}
	if _, err := layout.ProcPath(proc, 4343); err == nil {
		t.Error("ProcPath of a process that is not there: no error")
	}
}

// TestRealFoundLimits puts a process in a real limited cgroup and finds
// both the cgroup (from /proc) and its limits, as the external stack
// does for processes slowlab did not start.
func TestRealFoundLimits(t *testing.T) {
	slowlabtest.Require(t, os.Geteuid() == 0, "not root: the real cgroup test needs root")
	layout, err := Detect(DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "slowlab/test-" + hex.EncodeToString(b) + "/found"
	want := Limits{CPUCores: 0.25, MemoryBytes: 96 << 20}
	cg, err := New(DefaultRoot, name, want)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	p, err := startChild(context.Background(), "sleeper", "", ExecArgv(cg.ProcsFiles(), []string{"/bin/sleep", "60"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(0) })
	path, err := layout.ProcPath("/proc", p.pid())
	if err != nil {
		t.Fatal(err)
	}
	if path != "/"+name {
		t.Errorf("ProcPath(%d) = %q, want /%s", p.pid(), path, name)
	}
	got, err := layout.Limits(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Limits(%s) = %v, want %v", path, got, want)
	}
	self, err := layout.ProcPath("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self == path {
		t.Errorf("pid %s is in the child's cgroup %s", strconv.Itoa(os.Getpid()), path)
	}
}
