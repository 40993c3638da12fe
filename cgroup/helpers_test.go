package cgroup

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// testLimits are docs/experiments.md's limits, as the lab applies them.
var testLimits = map[string]Limits{
	"app":     {CPUCores: 0.25, MemoryBytes: 128 << 20},
	"proxy":   {CPUCores: 0.20, MemoryBytes: 96 << 20},
	"loadgen": {CPUCores: 0.20, MemoryBytes: 128 << 20},
}

// proc is a process a test started, in its own process group.
type proc struct {
	cmd   *exec.Cmd
	ready map[string]string
	done  chan struct{}
	err   error
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop kills the process group and reaps the process.
func (p *proc) stop(time.Duration) {
	syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// startChild starts argv and waits for its "ready k=v ..." line on
// stdout; it fails with the exit status if the process ends first.
func startChild(_ context.Context, name, _ string, argv []string, _ []string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	line, _ := bufio.NewReader(out).ReadString('\n')
	go func() { p.err = cmd.Wait(); close(p.done) }()
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok {
		<-p.done
		return nil, fmt.Errorf("%s exited before it was ready (%v)", name, p.err)
	}
	p.ready = map[string]string{}
	for _, f := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(f, "="); ok {
			p.ready[k] = v
		}
	}
	return p, nil
}

// limitSelf prepares and enters a self cgroup, as the lab does.
func limitSelf(root, name string, l Limits) (*Self, error) {
	s, err := PrepareSelf(root, name, l)
	if err != nil {
		return nil, err
	}
	return s, s.Enter()
}
