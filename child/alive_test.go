package child

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// Alive: this process is, a reaped one is not, and neither is a zombie.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process reported not alive")
	}
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(reaped.Process.Pid) {
		t.Errorf("reaped process %d reported alive", reaped.Process.Pid)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	// Exited but not reaped: waitid with WNOWAIT returns once it exited
	// and leaves it a zombie.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if Alive(zombie.Process.Pid) {
		t.Errorf("zombie %d reported alive", zombie.Process.Pid)
	}
}
