package main

import (
	"bufio"
	"encoding/csv"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
)

// TestInterruptEveryExperiment sends SIGINT to `slowlab reproduce NAME
// --quick` of every registered experiment (on the embedded stack where it
// takes one) as its first run starts: each must exit 1 "interrupted",
// leave no process, cgroup or work directory, keep a report whose results
// files parse, and record its one run aborted. latency-gap recorded it
// failed ("network path: context canceled"), as slow-client did when the
// signal came as its instruments started.
func TestInterruptEveryExperiment(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs and interrupts every experiment")
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("set child subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	for _, e := range lab.Experiments() {
		t.Run(e.Name, func(t *testing.T) {
			if why := e.Smoke(e.New()); why != "" {
				slowlabtest.RequireRoot(t, why)
			}
			out := filepath.Join(t.TempDir(), "results")
			args := []string{"reproduce", e.Name, "--quick", "--out", out}
			if e.Shared&lab.SharedStack != 0 {
				args = append(args, "--stack", "embedded")
			}
			if e.Shared&lab.SharedHostCPU != 0 {
				args = append(args, "--max-host-cpu", "0") // other tests load the machine
			}
			interruptAtFirstRun(t, args)
			if statuses := runStatuses(t, out); !slices.Equal(statuses, []string{"aborted"}) {
				t.Errorf("run statuses %v, want the one run started aborted", statuses)
			}
			var stderr strings.Builder
			lab.WriteReport(out, io.Discard, &stderr)
			if stderr.Len() > 0 {
				t.Errorf("the results do not read back: %s", stderr.String())
			}
		})
	}
}

// interruptAtFirstRun runs slowlab with args, sends SIGINT once its
// first run's progress line is out, and checks that it exits 1
// "interrupted" with nothing left behind.
func interruptAtFirstRun(t *testing.T, args []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
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
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "[1/") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	done := make(chan error, 1)
	go func() {
		for sc.Scan() {
			log = append(log, sc.Text())
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("still running 90 s after SIGINT")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(strings.Join(log, "\n"), "interrupted") {
		t.Errorf("exit: %v, want status 1 and \"interrupted\"; stderr:\n%s", err, strings.Join(log, "\n"))
	}
	if left := orphans(t); len(left) > 0 {
		t.Errorf("child processes left behind: %v", left)
	}
	checkNothingLeft(t, cmd.Process.Pid)
}

// runStatuses is the status column of every run file under dir (a CSV
// with run_id, status and reason columns: a request's status is its
// HTTP status, without a reason), in order.
func runStatuses(t *testing.T, dir string) []string {
	t.Helper()
	var statuses []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".csv" {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		col := -1
		if err == nil && len(rows) > 0 && slices.Contains(rows[0], "run_id") && slices.Contains(rows[0], "reason") {
			col = slices.Index(rows[0], "status")
		}
		if col < 0 {
			return err
		}
		for _, r := range rows[1:] {
			statuses = append(statuses, r[col])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return statuses
}
