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

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/internal/workdir"
)

// TestHangupInterruptsSession: SIGHUP (the terminal closed) ends a
// session as SIGINT does, its runs' cgroups and work directory removed and
// exit 1 "interrupted"; it killed it outright, leaving both behind. Under
// nohup (SIGHUP ignored) the session goes on.
func TestHangupInterruptsSession(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs and signals the slowlab binary")
	start := func(ignoreHUP bool) (*exec.Cmd, *bufio.Scanner) {
		out := filepath.Join(t.TempDir(), "results")
		args := []string{"reproduce", "slow-client", "--quick", "--stack", "embedded", "--max-host-cpu", "0", "--out", out}
		cmd := exec.Command(os.Args[0], args...)
		if ignoreHUP {
			cmd = exec.Command("sh", append([]string{"-c", `trap "" HUP; exec "$0" "$@"`, os.Args[0]}, args...)...)
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, bufio.NewScanner(stderr)
	}
	// until reads stderr until a line starts with prefix.
	until := func(sc *bufio.Scanner, prefix string) {
		t.Helper()
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				return
			}
		}
		t.Fatalf("stderr ended before a line starting %q", prefix)
	}

	cmd, sc := start(false)
	until(sc, "[2/") // a run's cgroups and work directory are in place
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(strings.Join(rest, "\n"), "interrupted") {
		t.Errorf("after SIGHUP: %v, want exit 1 and \"interrupted\"; stderr:\n%s", err, strings.Join(rest, "\n"))
	}
	checkNothingLeft(t, cmd.Process.Pid)

	cmd, sc = start(true)
	until(sc, "[1/")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	until(sc, "[2/") // the next run starts: the hangup was ignored
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("under nohup, SIGINT after SIGHUP: exit 0, want 1 (interrupted)")
	}
}

// checkNothingLeft fails t if the session of process pid left its work
// directory or a cgroup behind.
func checkNothingLeft(t *testing.T, pid int) {
	t.Helper()
	id := strconv.Itoa(pid)
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), workdir.Prefix+id+"-*")); len(left) > 0 {
		t.Errorf("work directory left behind: %v", left)
	}
	for _, c := range []string{"cpu", "memory", "unified", ""} {
		if _, err := os.Stat(filepath.Join(cgroup.DefaultRoot, c, "slowlab", id)); err == nil {
			t.Errorf("cgroup %s left behind", filepath.Join(cgroup.DefaultRoot, c, "slowlab", id))
		}
	}
}
