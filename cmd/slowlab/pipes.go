package main

import (
	"errors"
	"log"
	"os"
	"syscall"
)

// guardPipes makes a reader of standard output or error that went away
// (`slowlab reproduce ... 2>&1 | head`) interrupt the command as SIGINT
// does, so that it stops what it started and removes its runs' cgroups
// and work directory. A Go program that writes to a broken pipe on
// descriptor 1 or 2 is killed by SIGPIPE on the spot (os/signal), leaving
// them behind; os.Stdout and os.Stderr become duplicates of those
// descriptors (closed on exec), on which a broken pipe is an EPIPE error
// instead, and that error calls interrupt. Asking to be notified of
// SIGPIPE instead would also end a session on every broken connection of
// its load, which the experiments measure.
func guardPipes(interrupt func()) (stdout, stderr *pipeGuard) {
	os.Stdout, os.Stderr = dupFile(os.Stdout), dupFile(os.Stderr)
	log.SetOutput(os.Stderr)
	return &pipeGuard{os.Stdout, interrupt}, &pipeGuard{os.Stderr, interrupt}
}

// dupFile is a duplicate of f's descriptor, closed on exec; f itself when
// it cannot be duplicated.
func dupFile(f *os.File) *os.File {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name())
}

// pipeGuard writes to f and calls interrupt when its reader is gone.
type pipeGuard struct {
	f         *os.File
	interrupt func()
}

func (p *pipeGuard) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.interrupt()
	}
	return n, err
}
