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

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// TestInterruptMidMatrix sends SIGINT to `slowlab reproduce` during its
// second run: it must exit within 15 s, leave no child process behind, keep
// the completed run whole, mark the interrupted one aborted, and leave CSVs
// that parse.
func TestInterruptMidMatrix(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs and interrupts the slowlab binary")
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
	second := ""
	for second == "" && sc.Scan() {
		log = append(log, sc.Text())
		if f := strings.Fields(sc.Text()); len(f) > 1 && strings.HasPrefix(f[0], "[2/") {
			second = f[1]
		}
	}
	// Into the second run's load: interrupted once 5 of its requests are
	// in requests.csv (rows are written as they are measured).
	waitRows(t, filepath.Join(out, "requests.csv"), second, 5)
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
	case <-time.After(90 * time.Second):
		t.Fatalf("still running 90 s after SIGINT; log:\n%s", strings.Join(log, "\n"))
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
	perRun, notSent := map[string]int{}, map[string]int{}
	for _, r := range reqs {
		perRun[r.RunID]++
		if r.NotSent() {
			notSent[r.RunID]++
		}
	}
	if perRun[runs[0].RunID] != 72 || notSent[runs[0].RunID] != 0 {
		t.Errorf("completed run has %d request rows, %d not sent; want 72, all sent", perRun[runs[0].RunID], notSent[runs[0].RunID])
	}
	// Every scheduled request of the interrupted run is accounted for:
	// those measured before the interrupt, and the rest as not sent.
	if n, ns := perRun[runs[1].RunID], notSent[runs[1].RunID]; n != 72 || ns == 0 || ns > 72-5 {
		t.Errorf("aborted run has %d request rows, %d not sent; want all 72, at least 5 sent", n, ns)
	}
	if r := runs[1]; r.FastPlanned != 72 || r.FastSent != 72-notSent[r.RunID] {
		t.Errorf("aborted run: planned %d, sent %d; want 72 and the rows that were sent", r.FastPlanned, r.FastSent)
	}
	e, err := lab.Lookup("slow-client")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range e.Files {
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

// waitRows waits until the CSV file at path has at least n rows whose
// first column is runID.
func waitRows(t *testing.T, path, runID string, n int) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "\n"+runID+",") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d rows of run %q after 120 s", path, n, runID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// orphans lists live processes whose parent is this process, reaping any
// that already exited; processes that are exiting get up to 30 s.
func orphans(t *testing.T) []string {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if left = liveChildren(); len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// liveChildren reaps this process's exited children and lists the others.
func liveChildren() []string {
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
