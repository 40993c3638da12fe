package child

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// StartWithFiles is Start with files passed on to the child as its file
// descriptors 3, 4, ... (exec.Cmd.ExtraFiles), such as a listening socket
// the lab bound, so that a server that cannot say which port the kernel
// gave it (Uvicorn with several workers) serves on a port known before it
// starts. The caller keeps its own copies and closes them once
// StartWithFiles has returned.
func StartWithFiles(ctx context.Context, name, logPath string, argv, env []string, files []*os.File) (*Process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = pw
	cmd.Stderr = logf
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = StartCmd(cmd)
	pw.Close() // the child has its copy; EOF comes when every holder has closed it
	if err != nil {
		pr.Close()
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, done: make(chan struct{}), logf: logf, stdout: pr, readDone: make(chan struct{})}
	readyc := make(chan Ready, 1)
	go p.readStdout(readyc)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.awaitReady(ctx, readyc); err != nil {
		p.Stop(time.Second)
		return nil, err
	}
	return p, nil
}
