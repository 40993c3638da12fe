package idleconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// runSpec is one run: a condition and its repetition.
type runSpec struct {
	cond Condition
	rep  int
}

func (s runSpec) ID() string { return s.cond.RunID(s.rep) }

// Run implements lab.Config: every condition Reps times, each on a fresh
// stack (lab.Plan), with RLIMIT_NOFILE raised for the session (restored
// when it ends).
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := lab.RefuseExternal(c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Each connection is a descriptor here and one in the app or proxy
	// (which sends nothing upstream for a request it never got), each
	// process counting its own against the limit it inherits; the rest is
	// headroom for /fast, logs and the runtime.
	restore, err := raiseNoFile(uint64(slices.Max(c.Conns) + 4096))
	if err != nil {
		return nil, err
	}
	defer restore()
	res, err := lab.Plan[runSpec, Conn, RunRow]{Specs: c.specs, Line: runLine, Measure: c.runOne,
		Expected: func(runSpec) time.Duration {
			return max(time.Duration(c.Hold), time.Duration(c.Fast.Offset+c.Fast.Duration))
		}}.Run(ctx, env, c, &Result{})
	return res, errors.Join(err, restore())
}

// specs are the runs: every condition Reps times in a row.
func (c *Config) specs() (specs []runSpec, skipped []string) {
	for _, cond := range c.Conditions() {
		for rep := 1; rep <= c.Reps; rep++ {
			specs = append(specs, runSpec{cond, rep})
		}
	}
	return specs, nil
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	if r.Status != recorder.RunOK {
		return r.Status + ": " + r.Reason
	}
	return fmt.Sprintf("connected %d/%d: fin %d, reset %d, bound %d; server closed after %s s (max %s); /fast ok %d/%d p95 %s ms",
		r.Connected, r.Clients, r.FIN, r.Reset, r.Bound, lab.Num(r.ServerClosedP50S, 2), lab.Num(r.ServerClosedMaxS, 2),
		r.FastOK, r.FastSent, lab.Num(r.FastP95MS, 1))
}

// runOne runs one condition on a fresh stack. A run that could not be
// measured is returned failed with its reason; the error is for results
// that did not reach their files.
func (c *Config) runOne(ctx context.Context, env *lab.Env, s runSpec, id string, f *lab.RunFiles[Conn, RunRow]) (RunRow, error) {
	cond := s.cond
	run := RunRow{RunKey: lab.RunKey{RunID: id, Route: string(cond.Route), Server: cond.Server, Clients: cond.Conns, Rep: s.rep}, Mode: string(cond.Mode),
		Status: recorder.RunOK, BoundS: time.Duration(c.Hold).Seconds()}
	run.AppTimeoutS = lab.SetSeconds(c.AppTimeout)
	if c.HeaderTimeout > 0 && cond.Route != stack.RouteDirect {
		run.HeaderTimeoutS = recorder.Some(time.Duration(c.HeaderTimeout).Seconds())
	}
	srv, err := stack.ParseServer(cond.Server)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	fr, err := lab.StartFresh(ctx, env, stack.Deployment{RunID: id, Route: cond.Route, Server: srv,
		AppTimeout: time.Duration(c.AppTimeout), ClientHeaderTimeout: time.Duration(c.HeaderTimeout)}, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()
	fastURL := fr.Running.Target(stack.TargetFast, c.Fast.Path)
	u, err := url.Parse(fastURL)
	if err != nil {
		return lab.Failed(ctx, run, fmt.Errorf("target %q: %v", fastURL, err)), nil
	}
	l, rs, sampErr := lab.SampledLoad(fr, f.Resources, func(t0 time.Time) lab.Clients[Conn] {
		return c.load(ctx, env, id, cond, s.rep, u.Host, fastURL, t0, f)
	})
	run.AppMemMiB, run.AppRSSMiB = lab.MiB(rs.App.MemoryPeakBytes), lab.MiB(rs.App.RSSPeakBytes)
	run.ProxyMemMiB, run.ProxyRSSMiB = lab.MiB(rs.Proxy.MemoryPeakBytes), lab.MiB(rs.Proxy.RSSPeakBytes)
	fds := func(s recorder.ResourceSample) recorder.Maybe { return s.OpenFDs }
	est := func(s recorder.ResourceSample) recorder.Maybe { return s.Established }
	run.AppFDs, run.AppEstablished = recorder.PeakOf(rs.Samples, "app", fds), recorder.PeakOf(rs.Samples, "app", est)
	run.ProxyFDs, run.ProxyEstablished = recorder.PeakOf(rs.Samples, "proxy", fds), recorder.PeakOf(rs.Samples, "proxy", est)
	run = SummarizeRun(run, l.Rows, l.Reqs)
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr))
}

// load holds cond's connections to addr and, once every one was tried,
// runs /fast open loop; it returns once the holders are done (each within
// its bound), with the rows it wrote.
func (c *Config) load(ctx context.Context, env *lab.Env, id string, cond Condition, rep int, addr, fastURL string, t0 time.Time, f *lab.RunFiles[Conn, RunRow]) lab.Clients[Conn] {
	tried := make(chan struct{})
	h := loadgen.IdleHolders{Addr: addr, Mode: cond.Mode, N: cond.Conns, Sources: c.sources(cond.Conns), Hold: time.Duration(c.Hold),
		ByteEvery: time.Duration(c.ByteEvery), ConnectTimeout: time.Duration(c.ConnectTimeout), Dialers: c.Dialers,
		OnConnected: func(int) { close(tried) }}
	var held []loadgen.HeldConn
	var heldErr error
	var wg sync.WaitGroup
	wg.Go(func() { held, heldErr = h.Run(ctx) })
	var fr lab.FastRun
	select {
	case <-tried:
		// The schedule starts Fast.Offset after every connection was tried.
		fast := c.Fast
		fast.Offset += lab.Duration(time.Since(t0))
		meta := recorder.RunMeta{RunID: id, Route: string(cond.Route), Server: cond.Server, Rep: rep}
		fr = fast.Run(ctx, env, fastURL, false, meta, t0, f.Requests)
	case <-ctx.Done():
	}
	wg.Wait()
	rows := make([]Conn, 0, len(held))
	for _, o := range held {
		row := Conn{RunID: id, Route: string(cond.Route), Server: cond.Server, Mode: string(cond.Mode), Conns: cond.Conns,
			Seq: o.Seq, Source: o.Source, ConnectMS: float64(o.Connect) / float64(time.Millisecond), End: string(o.End),
			SentBytes: o.Sent, ReceivedBytes: o.Received, FirstLine: o.FirstLine}
		if !o.Start.IsZero() {
			row.StartS = o.Start.Sub(t0).Seconds()
		}
		if o.End != loadgen.EndConnectError && !(o.End == loadgen.EndCanceled && o.Source == "") {
			row.HeldS = recorder.Some(o.Held.Seconds())
		}
		if o.Err != nil {
			row.Error = o.Err.Error()
		}
		rows = append(rows, row)
		if err := f.Items.Write(row); err != nil && fr.WriteErr == nil {
			fr.WriteErr = err
		}
	}
	return lab.Clients[Conn]{Rows: rows, Reqs: fr.Reqs, Planned: fr.Planned, WriteErr: errors.Join(fr.WriteErr, heldErr)}
}
