package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// stackPool keeps the started stack between consecutive runs that deploy
// the same route, server and response size, so a matrix does not pay a
// Gunicorn and NGINX start for every run: runs of one rep differ only in
// their slow-client count. A stack is started afresh after a run that did
// not complete, or when a component died.
type stackPool struct {
	stack  Stack
	logDir string

	key  string
	cur  Running
	work string
}

// get returns a running stack for the run.
func (p *stackPool) get(ctx context.Context, runID string, spec RunSpec, largeSize int64) (Running, error) {
	key := fmt.Sprintf("%s/%s/%d", spec.Route, spec.Server.Name(), largeSize)
	if p.cur != nil && p.key == key && p.cur.Failed() == nil {
		return p.cur, nil
	}
	p.close()
	work, err := os.MkdirTemp("", "slowlab-run-")
	if err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	r, err := p.stack.Start(ctx, Deployment{RunID: runID, Route: spec.Route, Server: spec.Server,
		LargeSize: largeSize, LogDir: p.logDir, WorkDir: work})
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	p.cur, p.key, p.work = r, key, work
	return r, nil
}

// close stops the current stack, if any, and removes its work directory.
func (p *stackPool) close() error {
	if p.cur == nil {
		return nil
	}
	err := p.cur.Stop()
	os.RemoveAll(p.work)
	p.cur, p.key, p.work = nil, "", ""
	return err
}

func newStackPool(o Options) *stackPool {
	return &stackPool{stack: o.Stack, logDir: filepath.Join(o.Out, "logs")}
}
