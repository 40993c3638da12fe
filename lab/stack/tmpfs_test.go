package stack

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// TestProxyTempTmpfs: with TempTmpfs set, each proxy's temp dir is a tmpfs
// of that size in its own mount namespace (seen through
// /proc/PID/root), never in this process's mounts; once the proxy is
// killed with SIGKILL, no mount of it is left anywhere.
func TestProxyTempTmpfs(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "a mount namespace for the proxy's temp dir")
	for _, name := range []string{"embedded", "embedded+nginx"} {
		t.Run(name, func(t *testing.T) {
			if strings.HasSuffix(name, "nginx") {
				slowlabtest.RequireTool(t, "nginx")
			}
			st, _, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			srv, _ := ParseServer("sync-1")
			work, err := os.MkdirTemp("", "slowlab-tmpfs-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(work)
			const size = 2 << 20
			running, err := st.Start(context.Background(), Deployment{RunID: "tmpfs", Route: RouteBufferingOn, Server: srv,
				LogDir: t.TempDir(), WorkDir: work, TempTmpfs: size})
			if err != nil {
				t.Fatal(err)
			}
			defer running.Stop()
			pid := running.PIDs()["proxy"]
			dir := running.TempDirs()[0]
			var inside, outside syscall.Statfs_t
			if err := syscall.Statfs(filepath.Join("/proc", strconv.Itoa(pid), "root", dir), &inside); err != nil {
				t.Fatal(err)
			}
			if inside.Type != tmpfsMagic || inside.Blocks*uint64(inside.Bsize) != size {
				t.Errorf("temp dir in the proxy's namespace: type %#x, %d bytes; want a tmpfs of %d", inside.Type, inside.Blocks*uint64(inside.Bsize), size)
			}
			if err := syscall.Statfs(dir, &outside); err != nil {
				t.Fatal(err)
			}
			if outside.Type == tmpfsMagic && outside.Blocks*uint64(outside.Bsize) == size {
				t.Errorf("the tmpfs is visible in this process's mount namespace")
			}
			if !mounted(t, strconv.Itoa(pid)) {
				t.Error("the proxy's mountinfo lacks its tmpfs")
			}
			if mounted(t, "self") {
				t.Error("this process's mountinfo lists the proxy's tmpfs")
			}
			// The hardest end: SIGKILL, no cleanup code runs.
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			slowlabtest.WaitFor(t, "the proxy to be gone", func() bool { return syscall.Kill(pid, 0) != nil }, func() string { return "" })
			running.Stop()
			slowlabtest.WaitFor(t, "no process to have the proxy's tmpfs mounted", func() bool { return anyMounted(t) == "" }, func() string { return anyMounted(t) })
		})
	}
}

// mounted reports whether /proc/PID/mountinfo lists a tmpfs TmpfsArgv made.
func mounted(t *testing.T, pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "mountinfo"))
	if err != nil {
		return false // gone
	}
	return strings.Contains(string(b), " slowlab-proxy-temp ")
}

// anyMounted names a process whose mount namespace has such a tmpfs, ""
// when none has.
func anyMounted(t *testing.T) string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if mounted(t, filepath.Base(p)) {
			return p
		}
	}
	return ""
}
