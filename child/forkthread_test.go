package child

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartCmdOutlivesLockedThreads: a child started with StartCmd keeps
// running while goroutines exit locked to their threads (each such exit
// ends a thread); the control, a child forked by such a goroutine itself,
// is SIGKILLed by its parent death signal when that goroutine ends, which
// is what happened to Gunicorn mid-run before StartCmd.
func TestStartCmdOutlivesLockedThreads(t *testing.T) {
	Timing(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	command := func() *exec.Cmd {
		c := exec.Command(sleep, "60")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		t.Cleanup(func() {
			if c.Process != nil {
				c.Process.Kill()
				c.Wait()
			}
		})
		return c
	}
	kept := command()
	if err := StartCmd(kept); err != nil {
		t.Fatal(err)
	}
	// Goroutines that end locked end their threads; the last forks the
	// control on its own thread first.
	for i := range 8 {
		done := make(chan *exec.Cmd)
		go func() {
			runtime.LockOSThread()
			var c *exec.Cmd
			if i == 7 {
				c = command()
				if err := c.Start(); err != nil {
					t.Error(err)
					c = nil
				}
			}
			done <- c
		}()
		if control := <-done; control != nil {
			err := control.Wait()
			if ws, ok := control.ProcessState.Sys().(syscall.WaitStatus); err == nil || !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("control child ended with %v, want SIGKILL when its thread ended", err)
			}
		}
	}
	// The control is dead, so its thread has ended, like the 7 before it.
	var ws unix.WaitStatus
	if pid, err := unix.Wait4(kept.Process.Pid, &ws, unix.WNOHANG, nil); pid != 0 || err != nil {
		t.Fatalf("the child started with StartCmd ended (%v, signal %v) when other threads ended", err, ws.Signal())
	}
}
