package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
)

// TestCleanupCommand: `slowlab cleanup` removes what a killed session
// left on the real cgroup hierarchies (a dry run first only lists it),
// and refuses stray arguments.
func TestCleanupCommand(t *testing.T) {
	if code, _, stderr := runCmd(t, "cleanup", "extra"); code != 2 || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Errorf("cleanup extra: exit %d, %q", code, stderr)
	}
	slowlabtest.RequireRoot(t, "slowlab cleanup removes real cgroups")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(cgroup.SessionsDir, strconv.Itoa(dead.Process.Pid), "run-1", "app")
	cg, err := cgroup.New(cgroup.DefaultRoot, name, cgroup.Limits{CPUCores: 0.25, MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dirs := cg.Dirs()
	code, out, stderr := runCmd(t, "cleanup", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove "+dirs[0]) {
		t.Fatalf("dry run: exit %d, %q %q; want %s listed", code, out, stderr, dirs[0])
	}
	if _, err := os.Stat(dirs[0]); err != nil {
		t.Fatalf("the dry run removed %s", dirs[0])
	}
	code, out, stderr = runCmd(t, "cleanup")
	if code != 0 || !strings.Contains(out, "removed "+dirs[0]) {
		t.Errorf("cleanup: exit %d, %q %q", code, out, stderr)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left behind", d)
		}
	}
}

// TestCleanupWorkDirs: `slowlab cleanup` removes the run work directories
// of a session that is gone (a dry run first only lists it), and keeps a
// running session's and a name that is not a session's.
func TestCleanupWorkDirs(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	gone := filepath.Join(tmp, lab.WorkDirPrefix+strconv.Itoa(dead.Process.Pid)+"-1")
	mine := filepath.Join(tmp, lab.WorkDirPrefix+strconv.Itoa(os.Getpid())+"-2")
	other := filepath.Join(tmp, lab.WorkDirPrefix+"x-3")
	for _, d := range []string{filepath.Join(gone, "proxy_temp"), mine, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir() // no cgroups under it
	code, out, stderr := runCmd(t, "cleanup", "--cgroup-root", root, "--temp-dir", tmp, "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove "+gone) || strings.Contains(out, mine) || strings.Contains(out, other) {
		t.Fatalf("dry run: exit %d, %q %q; want only %s listed", code, out, stderr, gone)
	}
	code, out, stderr = runCmd(t, "cleanup", "--cgroup-root", root, "--temp-dir", tmp)
	if code != 0 || !strings.Contains(out, "removed "+gone) || !strings.Contains(out, "removed 1 work directories") {
		t.Errorf("cleanup: exit %d, %q %q", code, out, stderr)
	}
	for d, want := range map[string]bool{gone: false, mine: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", d, err == nil, want)
		}
	}
}
