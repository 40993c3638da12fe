package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestClosedPipeInterruptsSession: a session whose output goes to a
// reader that stops reading (`slowlab reproduce ... 2>&1 | head`) ends as
// an interrupted one, exit 1, its runs' cgroups and work directory
// removed; SIGPIPE killed it outright, leaving both behind.
func TestClosedPipeInterruptsSession(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs the slowlab binary into a pipe it then closes")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(os.Args[0], "reproduce", "slow-client", "--quick", "--stack", "embedded", "--max-host-cpu", "0", "--out", out)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(r)
	var seen []string
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "[2/") { // a run's cgroups and work directory are in place
		seen = append(seen, sc.Text())
	}
	r.Close() // the next line written finds no reader
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("after its reader closed: %v, want exit 1 (interrupted); output until then:\n%s", err, strings.Join(seen, "\n"))
	}
	checkNothingLeft(t, cmd.Process.Pid)
	if _, err := os.Stat(filepath.Join(out, "runs.csv")); err != nil {
		t.Errorf("the run measured before the pipe closed is not kept: %v", err)
	}
}
