package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/recorder"
)

// TestInterruptMidMatrix sends SIGINT to `slowlab reproduce` during its
// second run: it must exit within 15 s, leave no child process behind, keep
// the completed run whole, mark the interrupted one aborted, and leave CSVs
// that parse.
func TestInterruptMidMatrix(t *testing.T) {
	// Orphans of the command re-parent to this process, so any child it
	// failed to stop is found below.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("set child subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

	out := filepath.Join(t.TempDir(), "results")
	// The host CPU guard is tested on its own; here it must not abort runs
	// because other tests load the machine.
	cmd := exec.Command(os.Args[0], "reproduce", "slow-client", "--quick", "--stack", "embedded", "--max-host-cpu", "0", "--out", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.HasPrefix(sc.Text(), "[2/") {
			break
		}
	}
	time.Sleep(3 * time.Second) // into the second run's load
	interrupted := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGINT; log:\n%s", strings.Join(log, "\n"))
	}
	t.Logf("exited %v after SIGINT: %v", time.Since(interrupted).Round(time.Millisecond), err)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1 (interrupted)", err)
	}
	if left := orphans(t); len(left) > 0 {
		t.Errorf("child processes left behind: %v", left)
	}

	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Status != recorder.RunOK || runs[1].Status != recorder.RunAborted {
		t.Fatalf("runs: %+v; want the first ok and the second aborted", runs)
	}
	reqs, err := recorder.ReadFile[recorder.Request](filepath.Join(out, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	perRun := map[string]int{}
	for _, r := range reqs {
		perRun[r.RunID]++
	}
	if perRun[runs[0].RunID] != 72 {
		t.Errorf("completed run has %d request rows, want 72", perRun[runs[0].RunID])
	}
	if n := perRun[runs[1].RunID]; n == 0 || n >= 72 {
		t.Errorf("aborted run has %d request rows, want some measured before the interrupt", n)
	}
	for _, name := range []string{"large-responses.csv", "resource-samples.csv", "conditions.csv"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	if _, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(out, "large-responses.csv")); err != nil {
		t.Error(err)
	}
	if _, err := recorder.ReadFile[recorder.Condition](filepath.Join(out, "conditions.csv")); err != nil {
		t.Error(err)
	}
}

// orphans lists live processes whose parent is this process, reaping any
// that already exited.
func orphans(t *testing.T) []string {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			break
		}
	}
	me := strconv.Itoa(os.Getpid())
	var left []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == me {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return left
}
