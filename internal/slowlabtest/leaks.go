package slowlabtest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/workdir"
)

// OwnerEnv marks every process a test process starts: Main sets it to the
// test process's PID, and children inherit it, so LeftBehind finds this
// test's processes and no other session's (another `go test` package, a
// `slowlab` session beside it) running on the same machine.
const OwnerEnv = "SLOWLAB_TEST_OWNER"

// markOwner sets OwnerEnv for the processes this one starts.
func markOwner() { os.Setenv(OwnerEnv, strconv.Itoa(os.Getpid())) }

// LeftBehind lists what this test process started and is still there:
// processes that carry its OwnerEnv mark (but itself), cgroups under
// slowlab/PID, the lab's cgroups of this process (lab/stack.CgroupName),
// in each mounted hierarchy, its runs' work directories (lab.NewWorkDir's
// slowlab-run-PID-*, whose mounts and files go with them), and its own
// threads and file descriptors in another network namespace or on a TUN
// device (HeldNamespaces).
func LeftBehind() []string {
	left := append(leftProcessesAndCgroups(), HeldNamespaces()...)
	// A run whose load generator is this process moves it into a limited
	// cgroup and back: it must be back where it started.
	if now, _ := os.ReadFile("/proc/self/cgroup"); startCgroups != "" && string(now) != startCgroups {
		left = append(left, "this process in other cgroups than it started in:\n"+string(now)+"(started in:\n"+startCgroups+")")
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), workdir.Prefix+strconv.Itoa(os.Getpid())+"-*"))
	for _, d := range dirs {
		left = append(left, "work dir "+d)
	}
	return left
}

// HeldNamespaces lists this process's threads and file descriptors that
// are in a network namespace other than its own, or on /dev/net/tun: a
// namespace (or an emulated path's TUN device) that a closed path should
// have released. A namespace made for a child process is the child's,
// found among the processes.
func HeldNamespaces() []string {
	self := startNS
	if self == "" {
		return nil
	}
	var held []string
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, p := range append(tasks, fds...) {
		target, err := os.Readlink(p)
		if err == nil && (strings.HasPrefix(target, "net:[") && target != self || target == "/dev/net/tun") {
			held = append(held, "held "+p+" -> "+target)
		}
	}
	return held
}

// startNS is the network namespace the test process started in, read
// before any test runs: /proc/self/ns/net is the main thread's, which a
// test may move for a while.
var startNS, _ = os.Readlink("/proc/self/ns/net")

// startCgroups is /proc/self/cgroup before any test runs.
var startCgroups = func() string { b, _ := os.ReadFile("/proc/self/cgroup"); return string(b) }()

func leftProcessesAndCgroups() []string {
	me := strconv.Itoa(os.Getpid())
	mark := []byte(OwnerEnv + "=" + me + "\x00")
	var left []string
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range envs {
		pid := filepath.Base(filepath.Dir(p))
		if pid == me {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append(b, 0), mark) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if len(cmd) == 0 { // a zombie, or gone: nothing held
			continue
		}
		left = append(left, "process "+pid+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	cgs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", "slowlab", me))
	if st, err := os.Stat(filepath.Join("/sys/fs/cgroup", "slowlab", me)); err == nil && st.IsDir() {
		cgs = append(cgs, filepath.Join("/sys/fs/cgroup", "slowlab", me))
	}
	for _, cg := range cgs {
		sub, _ := os.ReadDir(cg)
		for _, s := range sub {
			if s.IsDir() {
				left = append(left, "cgroup "+filepath.Join(cg, s.Name()))
			}
		}
	}
	return left
}

// NothingLeft checks, when t ends, that nothing LeftBehind lists was
// added during t: each such process or cgroup is an error, after waiting
// for them to go (processes that are exiting). What was there before t
// (an earlier test's, checked there) is not t's doing.
func NothingLeft(t testing.TB) {
	t.Helper()
	EndToEnd(t, "it starts processes or cgroups it must not leave behind")
	before := LeftBehind()
	t.Cleanup(func() {
		added := func() []string {
			return slices.DeleteFunc(LeftBehind(), func(s string) bool { return slices.Contains(before, s) })
		}
		WaitFor(t, "the test's processes and cgroups to be gone", func() bool { return len(added()) == 0 },
			func() string { return "left behind: " + strings.Join(added(), "; ") })
	})
}
