package lab

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

// ReadyTimeout bounds how long a child may take to print its ready line.
const ReadyTimeout = 15 * time.Second

// child is a process the lab started, in its own process group so that the
// group (the child and anything it forks, like Gunicorn's workers) can be
// stopped together. It is killed if the lab dies (Pdeathsig).
type child struct {
	name  string
	cmd   *exec.Cmd
	ready map[string]string // key=value pairs of the "ready ..." line
	done  chan struct{}     // closed when the process has exited
	err   error             // Wait's result, valid after done
	logf  *os.File

	stopOnce sync.Once
	stopErr  error
}

// startChild starts argv, logging its stderr (and stdout after the ready
// line) to logPath, and waits until it prints a line starting with "ready ".
// If the child exits or ctx ends first, it is stopped and an error returned
// with the tail of its log.
func startChild(ctx context.Context, name, logPath string, argv []string, env []string) (*child, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), logf: logf}
	readyc := make(chan map[string]string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "ready "); ok {
				select {
				case readyc <- parseReady(rest):
				default:
				}
				continue
			}
			fmt.Fprintln(logf, line)
		}
		io.Copy(logf, stdout)
	}()
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	select {
	case c.ready = <-readyc:
		return c, nil
	case <-c.done:
		err = fmt.Errorf("%s exited before it was ready (%v): %s", name, c.err, c.logTail())
	case <-timer.C:
		err = fmt.Errorf("%s not ready after %s: %s", name, ReadyTimeout, c.logTail())
	case <-ctx.Done():
		err = fmt.Errorf("%s: %w", name, ctx.Err())
	}
	c.stop(time.Second)
	return nil, err
}

func parseReady(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// exited reports whether the child has exited, and why.
func (c *child) exited() (bool, error) {
	select {
	case <-c.done:
		return true, c.err
	default:
		return false, nil
	}
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop sends SIGTERM to the child's process group, waits up to grace, then
// SIGKILLs the group. It returns the child's exit error if it had already
// exited unexpectedly, nil otherwise. Only the first call signals anything,
// so a reaped PID is never signalled again.
func (c *child) stop(grace time.Duration) error {
	c.stopOnce.Do(func() { c.stopErr = c.doStop(grace) })
	return c.stopErr
}

func (c *child) doStop(grace time.Duration) error {
	defer c.logf.Close()
	pgid := c.cmd.Process.Pid
	if done, err := c.exited(); done {
		syscall.Kill(-pgid, syscall.SIGKILL) // grandchildren it left behind
		if err != nil {
			return fmt.Errorf("%s had exited: %v", c.name, err)
		}
		return nil
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// logTail returns the last lines the child wrote, for error messages.
func (c *child) logTail() string {
	b, err := os.ReadFile(c.logf.Name())
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
