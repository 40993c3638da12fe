package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// files are the open results files of a session: sse-streams.csv,
// sse-runs.csv, requests.csv and resource-samples.csv (lab.RunFiles), and
// sse-events.csv.
type files struct {
	*lab.RunFiles[Stream, RunRow]
	events *recorder.FileWriter[Event]
}

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Matrix), writing sse-events.csv besides the lab.RunFiles. A stream
// that ends badly is an outcome in sse-streams.csv, not a failed run.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := lab.RefuseExternal(c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	specs, skipped := c.Runs(env.Stack)
	f := &files{}
	m := &lab.Matrix[RunSpec, RunRow]{Specs: specs, Line: runLine,
		Expected: func(RunSpec) time.Duration { return c.Duration() },
		Measure: func(ctx context.Context, s RunSpec, id string) (RunRow, error) {
			return c.measure(ctx, env, s, id, f)
		}}
	lab.UseRunFilesWith(m, &f.RunFiles, &f.events)
	res, err := lab.RunMatrix(ctx, env, c, m, skipped)
	return &Result{*res}, err
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	return fmt.Sprintf("events %d/%d, delay p50 %s ms, p95 %s ms, max %s ms; held %s on %s workers; fast %d/%d ok, p95 %s ms  [%s]",
		r.Events, r.EventsExpected, lab.Num(r.DelayP50MS, 1), lab.Num(r.DelayP95MS, 1), lab.Num(r.DelayMaxMS, 1),
		lab.Num(r.HeldMax, 0), lab.Num(r.WorkersHoldingMax, 0), r.FastOK, r.FastTotal, lab.Num(r.P95MS, 1), lab.StatusText(r.Status, r.Reason))
}

// measure performs one run: a fresh stack, the instruments, the streams
// and the /fast schedule, the held-stream samples, then the run's
// verdict. Its error is only for results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *files) (RunRow, error) {
	run := RunRow{RunKey: lab.RunKey{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(), Clients: spec.Streams, Rep: spec.Rep},
		IntervalS: time.Duration(c.Stream.Interval).Seconds(), DurationS: time.Duration(c.Stream.Duration).Seconds(),
		StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	run.Workers, run.Slots = lab.Capacity(spec.Server)
	fr, err := lab.StartFresh(ctx, env, stack.Deployment{RunID: id, Route: deployed(spec.Route), Server: spec.Server,
		AppTimeout: c.appTimeout(), UpstreamHTTP10: pseudo[spec.Route].http10}, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()

	l, _, sampErr := lab.SampledLoad(fr, f.Resources, func(t0 time.Time) loaded {
		stopHeld := stack.SampleRunHeld(ctx, env, fr.Running, id, "streams")
		defer stopHeld(&run.HeldMax, &run.WorkersHoldingMax)
		return c.load(ctx, env, fr.Running, spec, &run, t0, f)
	})
	run = SummarizeRun(run, l.Reqs, l.Rows, l.events)
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr),
		lab.FastAccounted(run.FastTotal, run.FastPlanned), lab.Accounted(len(l.Rows), spec.Streams, "streams"))
}

// loaded is what a run's load measured: its streams' rows and /fast's
// (lab.Clients) and every event of the streams.
type loaded struct {
	lab.Clients[Stream]
	events []Event
}

// load starts the streams at t0 and, Fast.Offset later, the open-loop
// /fast schedule, and waits for both. Every stream and every scheduled
// request gets its rows as it finishes.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, spec RunSpec, run *RunRow, t0 time.Time, f *files) loaded {
	var l loaded
	var mu sync.Mutex
	var eventsErr error
	params := c.Params(spec.Route)
	base := Stream{ClientKey: lab.ClientKey{RunKey: run.RunKey}}
	l.Clients = lab.RunClients(ctx, env, c.Fast, running, run.Meta(), t0, f.RunFiles, c.Stream.Path+"?"+params.Query(), true, func(i int, u *url.URL) Stream {
		cl := loadgen.SSEClient{URL: u, Timeout: time.Duration(c.Stream.Timeout), AllowRemote: running.AllowRemote(),
			Header: http.Header{appserver.RequestIDHeader: {fmt.Sprintf("%s/sse-%d", run.RunID, i)}}}
		row, evs := streamRows(base, t0, params.Events(), cl.Run(ctx, i))
		mu.Lock()
		defer mu.Unlock()
		l.events = append(l.events, evs...)
		for _, e := range evs {
			if err := f.events.Write(e); err != nil && eventsErr == nil {
				eventsErr = err
			}
		}
		return row
	})
	run.FastPlanned = l.Planned
	l.WriteErr = errors.Join(l.WriteErr, eventsErr)
	return l
}
