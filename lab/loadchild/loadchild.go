// Package loadchild owns a load generator run as a child process (a
// slowlab subcommand such as long-poll's probe loop): started in its own
// cgroup under its memory limit, each line it prints handed on as it
// arrives, stopped with SIGTERM then SIGKILL when the run is cancelled,
// and its failure told apart: killed by the kernel for memory
// (ErrKilledForMemory, from the cgroup's OOM kill count), a bad line, or
// an exit status.
//
// What it leaves to others: which cgroup and limits, and the command, are
// the run's instruments' (lab/instrument, Instruments.RunLoad); the lines'
// format is loadgen's; the cgroup itself is package cgroup's.
package loadchild

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
)

// ErrKilledForMemory is wrapped by the error of a run whose load generator
// the kernel killed because its cgroup reached its memory limit.
var ErrKilledForMemory = errors.New("killed for memory")

// loadStopGrace is how long a load generator has, after SIGTERM, to end
// its requests and report them before it is killed.
const loadStopGrace = 10 * time.Second

// Run runs argv as a load generator in cg (none when nil; limit is its
// memory limit in bytes, 0 for none), while this process stays outside
// it. Each line the child prints on stdout goes to onLine as it arrives,
// so what it measured is written before the child ends, however it ends;
// its stderr goes to logPath. The error says why the child failed: killed
// for memory (ErrKilledForMemory, with its cgroup and limit), an exit
// status, or onLine's first error (after which the child is stopped).
// Cancelling ctx stops the child with SIGTERM, then SIGKILL.
func Run(ctx context.Context, cg *cgroup.Cgroup, limit int64, argv []string, logPath string, onLine func(string) error) error {
	kills := 0
	if cg != nil {
		argv = cgroup.ExecArgv(cg.ProcsFiles(), argv)
		kills, _ = cg.OOMKills() // a kernel that does not count: 0, and the kill shows as SIGKILL
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("load generator log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.StartCmd(cmd); err != nil {
		return fmt.Errorf("start load generator: %w", err)
	}
	pid := cmd.Process.Pid
	stopped := make(chan struct{})
	lineErr := make(chan error, 1)
	go func() {
		lineErr <- readLines(out, cg != nil, onLine)
		close(stopped)
	}()
	go stopOnCancel(ctx, pid, stopped)
	lerr := <-lineErr
	if lerr != nil {
		stopGroup(pid, syscall.SIGKILL)
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	return loadError(cg, limit, kills, werr, lerr, logPath)
}

// readLines hands each line of r to onLine, the first (the cgroup
// wrapper's ready line) skipped when skipReady; it stops at EOF or at
// onLine's first error.
func readLines(r io.Reader, skipReady bool, onLine func(string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
			if _, ok := child.ParseReady(line); ok && skipReady {
				skipReady = false
				continue
			}
			if err := onLine(line); err != nil {
				return err
			}
		}
		if err == io.EOF {
			if line != "" {
				return fmt.Errorf("load generator: cut line %q at its end", line)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stopOnCancel stops the child's process group when ctx ends before its
// output does: SIGTERM, then SIGKILL after loadStopGrace.
func stopOnCancel(ctx context.Context, pid int, stopped <-chan struct{}) {
	select {
	case <-stopped:
		return
	case <-ctx.Done():
	}
	stopGroup(pid, syscall.SIGTERM)
	t := time.NewTimer(loadStopGrace)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		stopGroup(pid, syscall.SIGKILL)
	}
}

// stopGroup signals the process group the child leads (only it and what
// it forked).
func stopGroup(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }

// loadError is why the load generator failed, if it did: the kernel's
// OOM kills in its cgroup first, then onLine's error, then how it exited.
func loadError(cg *cgroup.Cgroup, limit int64, before int, werr, lerr error, logPath string) error {
	if cg != nil {
		if n, err := cg.OOMKills(); err == nil && n > before {
			what := "its memory limit"
			if limit > 0 {
				what = fmt.Sprintf("its memory limit of %g MiB", float64(limit)/(1<<20))
			}
			return fmt.Errorf("the load generator was %w: cgroup %s reached %s (%d OOM kill(s) there; exit: %v); every result it reported before is written; its log: %s",
				ErrKilledForMemory, cg.Path(), what, n-before, werr, logPath)
		}
	}
	if lerr != nil {
		return fmt.Errorf("load generator output: %w", lerr)
	}
	if werr != nil {
		return fmt.Errorf("load generator: %w (see %s)", werr, logPath)
	}
	return nil
}
