package child

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ReadyTimeout bounds how long a child may take to be ready: long enough
// for an interpreter to import its modules on a loaded 2-core CI machine
// (components start without their CPU quota, see lab/stack), short
// enough that one that hangs fails its run in under a minute.
const ReadyTimeout = 45 * time.Second

// drainTimeout bounds how long Stop waits for the child's stdout to reach
// EOF after the process group is gone: a process that left the group (a
// daemon) could hold the pipe open for ever.
const drainTimeout = 5 * time.Second

// Process is a child process, in its own process group so that the group
// (the child and anything it forks, like Gunicorn's workers) can be
// stopped together. It is killed if its parent dies (Pdeathsig; see
// StartCmd for why it is forked from one thread).
//
// Its stdout is an os.Pipe the parent owns, not exec's StdoutPipe: os/exec
// forbids reading a StdoutPipe while Wait runs (Wait closes it, and the
// end of the output is lost). One goroutine reads it until EOF; Stop waits
// for that goroutine before it closes the log, so every line reaches the
// log and nothing writes to a closed file.
type Process struct {
	name     string
	cmd      *exec.Cmd
	ready    Ready
	done     chan struct{} // closed when the process has exited
	err      error         // Wait's result, valid after done
	logf     *os.File
	stdout   *os.File      // read end of the child's stdout
	readDone chan struct{} // closed when the stdout reader has finished

	stopOnce sync.Once
	stopErr  error
}

// Start starts argv with env, logging its stderr (and stdout after the
// ready line) to logPath, and waits until it prints its ready line. If the
// child exits, ReadyTimeout passes or ctx ends first, it is stopped and an
// error returned with the tail of its log.
func Start(ctx context.Context, name, logPath string, argv, env []string) (*Process, error) {
	return StartWithFiles(ctx, name, logPath, argv, env, nil)
}

func (p *Process) awaitReady(ctx context.Context, readyc <-chan Ready) error {
	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	select {
	case p.ready = <-readyc:
		return nil
	case <-p.done:
		// It may have printed its ready line just before exiting: the
		// reader decides, once it has drained the pipe.
		if r, ok := p.readyAfterExit(readyc); ok {
			p.ready = r
			return nil
		}
		return fmt.Errorf("%s exited before it was ready (%v): %s", p.name, p.err, p.LogTail())
	case <-timer.C:
		return fmt.Errorf("%s not ready after %s: %s", p.name, ReadyTimeout, p.LogTail())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", p.name, ctx.Err())
	}
}

// readyAfterExit returns the ready line of a child that has exited, if it
// printed one, once the reader has drained the pipe (or drainTimeout).
func (p *Process) readyAfterExit(readyc <-chan Ready) (Ready, bool) {
	select {
	case <-p.readDone:
	case <-time.After(drainTimeout):
	}
	select {
	case r := <-readyc:
		return r, true
	default:
		return nil, false
	}
}

// readStdout copies the child's stdout to its log until EOF, handing the
// first ready line to readyc instead.
func (p *Process) readStdout(readyc chan<- Ready) {
	defer close(p.readDone)
	sc := bufio.NewScanner(p.stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false // only the first ready line is the child's; later ones are log
	for sc.Scan() {
		line := sc.Text()
		if r, ok := ParseReady(line); ok && !sent {
			sent = true
			readyc <- r // buffered for one: never blocks
			continue
		}
		fmt.Fprintln(p.logf, line)
	}
	// A line longer than the scanner's limit: keep the rest verbatim.
	io.Copy(p.logf, p.stdout)
}

// Name is what the child was started as.
func (p *Process) Name() string { return p.name }

// Ready is the child's ready line.
func (p *Process) Ready() Ready { return p.ready }

// PID is the child's process id (and its process group's).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// LogPath is the child's log file.
func (p *Process) LogPath() string { return p.logf.Name() }

// Done is closed when the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited, and why.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the child's process group, waits up to grace, then
// SIGKILLs the group. It returns the child's exit error if it had already
// exited unexpectedly, nil otherwise. Only the first call signals
// anything, so a reaped PID is never signalled again.
func (p *Process) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.doStop(grace) })
	return p.stopErr
}

func (p *Process) doStop(grace time.Duration) error {
	defer p.closeLog()
	pgid := p.cmd.Process.Pid
	if done, err := p.Exited(); done {
		syscall.Kill(-pgid, syscall.SIGKILL) // grandchildren it left behind
		if err != nil {
			return fmt.Errorf("%s had exited: %v", p.name, err)
		}
		return nil
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// closeLog waits for the stdout reader to reach EOF (bounded by
// drainTimeout, after which the pipe is closed under it), then closes the
// log: the reader is the last writer.
func (p *Process) closeLog() {
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	select {
	case <-p.readDone:
	case <-t.C:
		fmt.Fprintf(p.logf, "slowlab: %s's stdout still open %s after it exited; closed\n", p.name, drainTimeout)
		p.stdout.Close()
		<-p.readDone
	}
	p.stdout.Close()
	p.logf.Close()
}

// LogTail returns the last lines the child wrote, for error messages.
func (p *Process) LogTail() string {
	b, err := os.ReadFile(p.logf.Name())
	if err != nil {
		return "(no log)"
	}
	b = bytes.TrimSpace(b)
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	if len(b) == 0 {
		return "(empty log)"
	}
	return strings.ReplaceAll(string(b), "\n", " | ")
}

// WaitGroupGone waits, at most timeout, until no process of process group
// pgid exists: Stop SIGKILLs a child's group but cannot wait for the
// grandchildren (they are not its children), and a next run, or the
// removal of their cgroup, should not overlap with them.
func WaitGroupGone(pgid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
