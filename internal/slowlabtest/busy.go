package slowlabtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/prometheus/procfs"
)

// Spin keeps one CPU busy until ctx ends. Run in the test's process, it
// is load of the session a host-CPU guard leaves out (the session's own
// load is the experiment's); BusyCPUs is load outside it.
func Spin(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		for i := 0; i < 1<<16; i++ {
			n ^= i
		}
	}
}

// BusyCPUs keeps every CPU busy until t ends with processes outside this
// process's tree, which is the session a host-CPU guard leaves out: a
// busy host the test causes itself, for tests of the guard (waiting for
// the machine to be busy of its own took minutes on an idle one). See
// SpinOutside.
func BusyCPUs(t testing.TB) {
	t.Helper()
	for range runtime.NumCPU() {
		SpinOutside(t)
	}
}

// spinScript starts a shell that starts a busy loop, says both PIDs, and
// exits at once, so the two are orphaned: their parent is no longer this
// process. The shell left behind kills the loop when its fd 3, a pipe
// from this process, reaches EOF, which it does when this process ends,
// however it ends.
const spinScript = `sh -c '(while :; do :; done) </dev/null >/dev/null 2>&1 & echo $$ $!; read x <&3; kill $!' &`

// SpinOutside keeps one CPU busy until t ends with a process outside this
// process's tree (spinScript), and returns its PID. It and its watching
// shell are ended by PID when t ends.
func SpinOutside(t testing.TB) int {
	t.Helper()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd := exec.Command("sh", "-c", spinScript)
	cmd.Stdout, cmd.ExtraFiles = outW, []*os.File{lifeR}
	err = cmd.Start()
	outW.Close()
	lifeR.Close()
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		lifeW.Close()
		t.Fatalf("start a busy loop: %v", err)
	}
	var shell, loop int
	line, err := bufio.NewReader(outR).ReadString('\n')
	if _, serr := fmt.Sscan(line, &shell, &loop); err != nil || serr != nil {
		lifeW.Close()
		t.Fatalf("busy loop's PIDs %q: %v %v", line, err, serr)
	}
	t.Cleanup(func() {
		syscall.Kill(loop, syscall.SIGKILL)
		syscall.Kill(shell, syscall.SIGKILL)
		lifeW.Close()
	})
	// The shell that started them has been reaped: each PID's parent is
	// now another process's.
	for _, pid := range []int{shell, loop} {
		p, err := procfs.NewProc(pid)
		if err != nil {
			t.Fatalf("busy loop %d: %v", pid, err)
		}
		if st, err := p.Stat(); err != nil || st.PPID == os.Getpid() {
			t.Fatalf("busy loop %d: parent %d (%v), want one other than this process", pid, st.PPID, err)
		}
	}
	return loop
}
