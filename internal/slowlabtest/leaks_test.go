package slowlabtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// LeftBehind lists a process this test process started and a cgroup under
// its own slowlab/PID, and neither another owner's process nor another
// session's cgroup; what ended is no longer listed.
func TestLeftBehindIsThisProcesssOwn(t *testing.T) {
	Timing(t)
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

// A thread of this process left in a network namespace of its own is
// listed while it is there, and not once it has gone.
func TestLeftBehindHasThreadsInOtherNamespaces(t *testing.T) {
	Timing(t)
	RequireRoot(t, "a network namespace (CAP_SYS_ADMIN)")
	inNS, release, done := make(chan error), make(chan struct{}), make(chan struct{})
	var inThread func()
	inThread = func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread cannot exit with its goroutine: hold it, so
			// the goroutine that moves runs on another thread.
			go inThread()
			<-done
			runtime.UnlockOSThread()
			return
		}
		defer close(done)
		// Never unlocked: the thread exits with the goroutine.
		inNS <- unix.Unshare(unix.CLONE_NEWNET)
		<-release
	}
	go inThread()
	if err := <-inNS; err != nil {
		t.Fatalf("unshare: %v", err)
	}
	held := func() bool {
		return slices.ContainsFunc(LeftBehind(), func(s string) bool { return strings.HasPrefix(s, "held /proc/self/task/") })
	}
	if !held() {
		close(release)
		t.Fatalf("a thread in a namespace of its own is not listed: %v", LeftBehind())
	}
	close(release)
	<-done
	WaitFor(t, "the namespace's thread to exit", func() bool { return !held() }, func() string { return strings.Join(HeldNamespaces(), "; ") })
}

// A test process left in another cgroup (a run that did not move it back)
// is listed; back where it started, it is not.
func TestLeftBehindSeesProcessMoved(t *testing.T) {
	Timing(t)
	root := "/sys/fs/cgroup/memory"
	Require(t, os.Geteuid() == 0 && isDir(root), "a cgroup v1 memory hierarchy writable by root")
	moved := func() bool {
		return slices.ContainsFunc(LeftBehind(), func(s string) bool { return strings.HasPrefix(s, "this process in other cgroups") })
	}
	if moved() {
		t.Fatalf("listed before any move: %v", LeftBehind())
	}
	orig, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var home string
	for _, line := range strings.Split(string(orig), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "memory" {
			home = filepath.Join(root, parts[2])
		}
	}
	if home == "" {
		t.Fatal("no memory line in /proc/self/cgroup with a v1 memory hierarchy mounted")
	}
	dir := filepath.Join(root, "slowlab-leaktest-self-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	back := func() {
		os.WriteFile(filepath.Join(home, "cgroup.procs"), pid, 0o644)
		os.Remove(dir)
	}
	defer back()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0o644); err != nil {
		t.Fatal(err)
	}
	if !moved() {
		t.Errorf("moved into %s but not listed: %v", dir, LeftBehind())
	}
	back()
	if moved() {
		t.Errorf("back home but still listed: %v", LeftBehind())
	}
}
