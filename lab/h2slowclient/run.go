package h2slowclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// heldEvery is how often a run reads the app's send log for the slow
// responses it is writing.
const heldEvery = 200 * time.Millisecond

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Plan), writing h2-streams.csv, h2-runs.csv, requests.csv,
// resource-samples.csv and environment.json. A stream the proxy reset or
// cut is an outcome in h2-streams.csv, not a failed run.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	return lab.Plan[RunSpec, Stream, RunRow]{
		Specs:    func() ([]RunSpec, []string) { return c.runsOn(env.Stack) },
		Expected: func(RunSpec) time.Duration { return c.Hold() },
		Measure:  c.measure,
		Line:     runLine,
	}.Run(ctx, env, c, &Result{})
}

// runsOn is Runs but for the HTTP/3 conditions whose route's proxy on
// the stack (Stack.ProxyFor) does not serve HTTP/3 (NGINX 1.22, Debian's,
// has no QUIC): those are skipped, each condition named once.
func (c *Config) runsOn(st stack.Stack) (runs []RunSpec, skipped []string) {
	for _, r := range c.Runs() {
		p := st.ProxyFor(r.Route)
		h3, ok := p.(stack.HTTP3Server)
		if r.Protocol == ProtocolH3 && !(ok && h3.ServesHTTP3()) {
			if r.Rep == 1 {
				name := "none"
				if p != nil {
					name = p.Name()
				}
				skipped = append(skipped, fmt.Sprintf("%s: HTTP/3: the %s stack's proxy (%s) does not serve it", strings.TrimSuffix(r.ID(), ".rep1"), st.Name, name))
			}
			continue
		}
		runs = append(runs, r)
	}
	return runs, skipped
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	return fmt.Sprintf("streams %d complete, %d cut, %d reset, %d failed; app held %s of %s workers; fast %d/%d ok, p95 %s ms  [%s]",
		r.Complete, r.Cut, r.Reset, r.Failed, lab.Num(r.AppHeldMax, 0), lab.Num(r.Workers, 0), r.FastOK, r.FastTotal, lab.Num(r.P95MS, 1),
		lab.StatusText(r.Status, r.Reason))
}

// measure performs one run: a fresh stack, the slow streams and the /fast
// schedule over HTTP/2 or HTTP/3, the app's held responses sampled, then the
// verdict. Its error is only for results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *lab.RunFiles[Stream, RunRow]) (RunRow, error) {
	run := RunRow{RunKey: lab.RunKey{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(), Clients: spec.Streams, Rep: spec.Rep}, Protocol: spec.Protocol,
		Conns: 1, FastConn: spec.Fast, Read: spec.Read, StreamWindow: int64(c.Slow.StreamWindow), StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	if spec.Conns == ConnsEach {
		run.Conns = spec.Streams
	}
	run.ConnWindow = int64(cmp.Or(spec.ConnWindow, c.Slow.ConnWindow))
	_, run.Workers = lab.Capacity(spec.Server) // the worker slots: none for an event loop
	d := stack.Deployment{RunID: id, Route: spec.Route, Server: spec.Server, LargeSize: int64(c.Slow.Size), SendTimeout: time.Duration(spec.SendTimeout),
		HTTP3: spec.Protocol == ProtocolH3}
	fr, err := lab.StartFresh(ctx, env, d, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()
	n := run.Conns // and /fast's own connection when separate
	if spec.Fast == FastSeparate {
		n++
	}
	conns, err := c.dial(ctx, fr.Running, n, spec.ConnWindow, spec.Protocol)
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	l, res, sampErr := lab.SampledLoad(fr, f.Resources, func(t0 time.Time) loaded { return c.load(ctx, env, fr.Running, spec, &run, conns, t0, f) })
	run = SummarizeRun(run, l.Reqs, l.Rows)
	run.AppHeldMax, run.AppComplete = l.heldMax, l.appComplete
	run.ProxyMemPeakMiB, run.TempPeakMiB = recorder.MemoryPeakMiB(res.Proxy), res.TempPeakMiB
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr),
		lab.FastAccounted(run.FastTotal, run.FastPlanned), lab.Accounted(len(l.Rows), spec.Streams, "streams"))
}

// streamConn is a connection to the proxy whose streams a run reads:
// a *loadgen.H2Conn (h2) or a *loadgen.H3Conn (h3), the same facts a
// stream.
type streamConn interface {
	GetHeader(path string, h http.Header, r loadgen.H2Read) <-chan loadgen.H2Result
	Close() error
}

// dial opens n connections to the proxy with the scenario's windows, the
// connection's connWindow when set: over HTTP/2 (cleartext with prior
// knowledge, or TLS with ALPN h2 on a TLS route), or over HTTP/3 (QUIC to
// the proxy's TLS port over UDP).
func (c *Config) dial(ctx context.Context, running *stack.Running, n int, connWindow lab.Size, protocol string) ([]streamConn, error) {
	var conns []streamConn
	connWindow = cmp.Or(connWindow, c.Slow.ConnWindow)
	timeout := time.Duration(c.Slow.Timeout)
	for range n {
		var cn streamConn
		var err error
		name := "HTTP/2" // how the error names the protocol
		if protocol == ProtocolH3 {
			name = "HTTP/3"
			cn, err = loadgen.DialH3(ctx, loadgen.H3Options{Addr: running.ProxyAddr(), TLS: running.ClientTLS(), StreamWindow: uint64(c.Slow.StreamWindow),
				ConnWindow: uint64(connWindow), Timeout: timeout, AllowRemote: running.AllowRemote()})
		} else {
			cn, err = loadgen.DialH2(ctx, loadgen.H2Options{Addr: running.ProxyAddr(), TLS: running.ClientTLS(), StreamWindow: uint32(c.Slow.StreamWindow),
				ConnWindow: uint32(connWindow), Timeout: timeout, AllowRemote: running.AllowRemote()})
		}
		if err != nil {
			return conns, fmt.Errorf("%s connection to the proxy: %w", name, err)
		}
		conns = append(conns, cn)
	}
	return conns, nil
}

// loaded is what a run's load measured: its streams' rows and /fast's
// (lab.Clients), and what the app's send log said of the streams.
type loaded struct {
	lab.Clients[Stream]
	heldMax     recorder.Maybe
	appComplete int
	held        map[string]bool // at the hold's end: begun by the app, not finished
}

// load starts the slow streams at t0 and, Fast.Offset later, the /fast
// schedule on its connection; at the hold's end it reads which slow
// responses the app is still writing, and a moment later the streams
// still open are cut (reset by their reader), so the app's workers are
// free again and /fast's last requests end.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, spec RunSpec, run *RunRow, conns []streamConn,
	t0 time.Time, f *lab.RunFiles[Stream, RunRow]) loaded {
	var l loaded
	read := loadgen.H2Read{Rate: float64(c.Slow.Rate)}
	if spec.Read == ReadStall {
		read = loadgen.H2Read{Stall: c.Hold() + time.Duration(c.Slow.Timeout)}
	}
	read.Until = t0.Add(c.Hold() + heldEvery)
	ids := make([]string, spec.Streams)
	results := make([]<-chan loadgen.H2Result, spec.Streams)
	for i := range spec.Streams {
		ids[i] = run.RunID + "-s" + strconv.Itoa(i)
		results[i] = conns[i%run.Conns].GetHeader(c.Slow.Path, http.Header{appserver.RequestIDHeader: {ids[i]}}, read)
	}
	hold, cancel := context.WithDeadline(ctx, t0.Add(c.Hold()))
	defer cancel()
	stopHeld := sampleHeld(hold, running, ids, &l)
	go func() { <-hold.Done(); stopHeld() }()
	fastConn := conns[0]
	if spec.Fast == FastSeparate {
		fastConn = conns[len(conns)-1]
	}
	meta := run.Meta()
	var fast lab.FastRun
	switch fc := fastConn.(type) {
	case *loadgen.H3Conn:
		fast = c.Fast.RunH3(ctx, env, fc, running.URL()+c.Fast.Path, meta, t0, f.Requests)
	case *loadgen.H2Conn:
		fast = c.Fast.RunH2(ctx, env, fc, running.URL()+c.Fast.Path, meta, t0, f.Requests)
	}
	run.FastPlanned, l.Reqs, l.WriteErr = fast.Planned, fast.Reqs, fast.WriteErr
	for i, ch := range results {
		r := <-ch
		row := streamRow(*run, i, i%run.Conns, r, errors.Is(r.Err, loadgen.ErrH2Cut) || errors.Is(r.Err, loadgen.ErrH3Cut), stopHeld()[ids[i]])
		l.Rows = append(l.Rows, row)
		if err := f.Items.Write(row); err != nil && l.WriteErr == nil {
			l.WriteErr = err
		}
	}
	return l
}

// sampleHeld reads the app's send log every heldEvery until stop: the
// most of the slow responses (ids) begun and not finished at once, and,
// at the first stop, which are so then and how many the app finished
// whole. stop returns those held then; later calls return the same.
// Where the app keeps no send log they stay empty.
func sampleHeld(ctx context.Context, running *stack.Running, ids []string, l *loaded) (stop func() map[string]bool) {
	count := func() (held map[string]bool, complete int, ok bool) {
		served, ok, err := running.AppServed(context.WithoutCancel(ctx))
		if !ok || err != nil {
			return nil, 0, false
		}
		held = map[string]bool{}
		for _, id := range ids {
			s, begun := served[id]
			if begun && !s.Ended {
				held[id] = true
			}
			if s.Complete {
				complete++
			}
		}
		return held, complete, true
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var most int
	wg.Go(func() {
		tick := time.NewTicker(heldEvery)
		defer tick.Stop()
		for {
			if held, _, ok := count(); ok {
				most = max(most, len(held))
				l.heldMax = recorder.Some(float64(most))
			}
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	})
	return sync.OnceValue(func() map[string]bool {
		close(done)
		wg.Wait()
		if held, complete, ok := count(); ok {
			l.held, l.appComplete = held, complete
			l.heldMax = recorder.Some(float64(max(most, len(held))))
		}
		return l.held
	})
}

// streamRow is one slow stream's row: cut says the run closed its
// connection at the hold's end, held that the app was still writing its
// response then.
func streamRow(run RunRow, stream, conn int, r loadgen.H2Result, cut, held bool) Stream {
	row := Stream{ClientKey: lab.ClientKey{RunKey: run.RunKey, Client: stream}, Protocol: run.Protocol, Conn: conn,
		Status: r.Status, Bytes: r.Bytes, TotalS: r.Total.Seconds(), AppHeld: held}
	if r.Status > 0 {
		row.FirstByteMS = recorder.Some(float64(r.FirstByte.Microseconds()) / 1e3)
	}
	switch {
	case r.Complete:
		row.Outcome = OutcomeComplete
	case cut:
		row.Outcome = OutcomeCut
	case errors.As(r.Err, new(loadgen.H2ResetError)) || errors.As(r.Err, new(loadgen.H3ResetError)):
		row.Outcome = OutcomeReset
	case r.Err != nil:
		row.Outcome = loadgen.ErrorReason(r.Err)
	default:
		row.Outcome = "incomplete"
	}
	if r.Err != nil && !cut {
		row.Error = r.Err.Error()
	}
	return row
}
