package slowlabtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// LeftBehind lists a process this test process started and a cgroup under
// its own slowlab/PID, and neither another owner's process nor another
// session's cgroup; what ended is no longer listed.
func TestLeftBehindIsThisProcesssOwn(t *testing.T) {
	markOwner()
	has := func(what string) bool {
		return slices.ContainsFunc(LeftBehind(), func(s string) bool { return strings.HasPrefix(s, what) })
	}
	mine := exec.Command("sleep", "600")
	other := exec.Command("sleep", "600")
	other.Env = append(os.Environ(), OwnerEnv+"=1")
	for _, c := range []*exec.Cmd{mine, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	if !has("process " + strconv.Itoa(mine.Process.Pid) + " ") {
		t.Errorf("own process %d not listed: %v", mine.Process.Pid, LeftBehind())
	}
	if has("process " + strconv.Itoa(other.Process.Pid) + " ") {
		t.Errorf("another owner's process %d listed", other.Process.Pid)
	}
	mine.Process.Kill()
	mine.Wait()
	if has("process " + strconv.Itoa(mine.Process.Pid) + " ") {
		t.Errorf("ended process %d still listed", mine.Process.Pid)
	}

	root := "/sys/fs/cgroup/memory"
	Require(t, os.Geteuid() == 0 && isDir(root), "a cgroup v1 memory hierarchy writable by root")
	own := filepath.Join(root, "slowlab", strconv.Itoa(os.Getpid()), "run1")
	foreign := filepath.Join(root, "slowlab", "1", "leaktest-"+strconv.Itoa(os.Getpid()))
	for _, dir := range []string{own, foreign} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir); os.Remove(filepath.Dir(dir)) })
	}
	if !has("cgroup " + own) {
		t.Errorf("own cgroup %s not listed: %v", own, LeftBehind())
	}
	if has("cgroup " + foreign) {
		t.Errorf("another session's cgroup %s listed", foreign)
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
