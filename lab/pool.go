package lab

import (
	"context"
	"fmt"
	"os"

	"github.com/slowlab/slowlab/lab/stack"
)

// Pool keeps the started stack between consecutive runs that deploy the
// same route, server and response size, so a matrix does not pay a
// Gunicorn and NGINX start for every run: runs of one rep differ only in
// their load. A stack is started afresh after a run that did not
// complete (Discard), or when a component died.
type Pool struct {
	env  *Env
	key  string
	cur  *stack.Running
	work string
}

// NewPool returns a pool of env's stack.
func NewPool(env *Env) *Pool { return &Pool{env: env} }

// Get returns a running stack for the run.
func (p *Pool) Get(ctx context.Context, runID string, route stack.Route, server stack.Server, largeSize int64) (*stack.Running, error) {
	key := fmt.Sprintf("%s/%s/%d", route, server.Name(), largeSize)
	if p.cur != nil && p.key == key && p.cur.Failed() == nil {
		return p.cur, nil
	}
	p.Close()
	work, err := NewWorkDir()
	if err != nil {
		return nil, err
	}
	r, err := p.env.Stack.Start(ctx, stack.Deployment{RunID: runID, Route: route, Server: server,
		LargeSize: largeSize, LogDir: p.env.LogDir(), WorkDir: work})
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	p.cur, p.key, p.work = r, key, work
	return r, nil
}

// Close stops the current stack, if any, and removes its work directory.
func (p *Pool) Close() error {
	if p.cur == nil {
		return nil
	}
	err := p.cur.Stop()
	os.RemoveAll(p.work)
	p.cur, p.key, p.work = nil, "", ""
	return err
}
