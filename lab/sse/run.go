package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// files are the open results files of a session.
type files struct {
	events    *recorder.FileWriter[Event]
	streams   *recorder.FileWriter[Stream]
	runs      *recorder.FileWriter[RunRow]
	requests  *recorder.FileWriter[recorder.Request]
	resources *recorder.FileWriter[recorder.ResourceSample]
}

// fileNames are the results files besides sse-runs.csv.
var fileNames = []string{eventFile, streamFile,
	recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()}

// openFiles creates the session's files in dir, or opens them to append.
func openFiles(dir string, resume bool) (*files, error) {
	f := &files{}
	var err error
	if f.events, err = lab.OpenFile[Event](dir, resume); err == nil {
		if f.streams, err = lab.OpenFile[Stream](dir, resume); err == nil {
			if f.runs, err = lab.OpenFile[RunRow](dir, resume); err == nil {
				if f.requests, err = lab.OpenFile[recorder.Request](dir, resume); err == nil {
					f.resources, err = lab.OpenFile[recorder.ResourceSample](dir, resume)
				}
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, f.close())
	}
	return f, nil
}

// close closes every open file; it is called once.
func (f *files) close() error {
	var errs []error
	if f.events != nil {
		errs = append(errs, f.events.Close())
	}
	if f.streams != nil {
		errs = append(errs, f.streams.Close())
	}
	if f.runs != nil {
		errs = append(errs, f.runs.Close())
	}
	if f.requests != nil {
		errs = append(errs, f.requests.Close())
	}
	if f.resources != nil {
		errs = append(errs, f.resources.Close())
	}
	*f = files{}
	return errors.Join(errs...)
}

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Matrix: resume, the host-CPU guard, progress), writing
// sse-events.csv, sse-streams.csv, sse-runs.csv, requests.csv,
// resource-samples.csv and environment.json. A run whose stack fails is
// recorded as failed and the next goes on; a stream that ends badly is an
// outcome in sse-streams.csv, not a failed run. Cancelling ctx keeps what
// was measured and returns ctx's error.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := lab.RefuseExternal(c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	specs, skipped := c.Runs(env.Stack)
	var f *files
	m := &lab.Matrix[RunSpec, RunRow]{Specs: specs, Files: fileNames, Line: runLine,
		Expected: func(RunSpec) time.Duration { return c.Duration() },
		Open: func(dir string, resume bool) (lab.RowWriter[RunRow], func() error, error) {
			var err error
			if f, err = openFiles(dir, resume); err != nil {
				return nil, nil, err
			}
			return f.runs, f.close, nil
		},
		Measure: func(ctx context.Context, s RunSpec, id string) (RunRow, error) {
			return c.measure(ctx, env, s, id, f)
		}}
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
		AppTimeout: c.appTimeout(), UpstreamHTTP10: upstreamHTTP10(spec.Route)}, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()

	l, _, sampErr := lab.SampledLoad(fr, f.resources, func(t0 time.Time) loaded {
		stopHeld := stack.SampleRunHeld(ctx, env, fr.Running, id, "streams")
		defer stopHeld(&run.HeldMax, &run.WorkersHoldingMax)
		return c.load(ctx, env, fr.Running, spec, &run, t0, f)
	})
	run = SummarizeRun(run, l.reqs, l.streams, l.events)
	streams := ""
	if len(l.streams) != spec.Streams {
		streams = fmt.Sprintf("%d streams accounted of %d", len(l.streams), spec.Streams)
	}
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.writeErr, sampErr),
		lab.FastAccounted(run.FastTotal, run.FastPlanned), streams)
}

// loaded is what a run's load measured.
type loaded struct {
	streams  []Stream
	events   []Event
	reqs     []recorder.Request
	writeErr error
}

// load starts the streams at t0 and, Fast.Offset later, the open-loop
// /fast schedule, and waits for both. Every stream and every scheduled
// request gets its rows as it finishes.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, spec RunSpec, run *RunRow, t0 time.Time, f *files) loaded {
	var l loaded
	var mu sync.Mutex
	params := c.Params(spec.Route)
	u, err := loadgen.CheckTarget(running.URL()+c.Stream.Path+"?"+params.Query(), running.AllowRemote())
	if err != nil {
		l.writeErr = err
		return l
	}
	base := Stream{ClientKey: lab.ClientKey{RunKey: run.RunKey}}
	fast := c.Fast.RunBeside(ctx, env, running.URL()+c.Fast.Path, running.AllowRemote(), run.Meta(), t0, f.requests, spec.Streams, func(i int) {
		cl := loadgen.SSEClient{URL: u, Timeout: time.Duration(c.Stream.Timeout), AllowRemote: running.AllowRemote(),
			Header: http.Header{appserver.RequestIDHeader: {fmt.Sprintf("%s/sse-%d", run.RunID, i)}}}
		row, evs := streamRows(base, t0, params.Events(), cl.Run(ctx, i))
		mu.Lock()
		defer mu.Unlock()
		l.streams, l.events = append(l.streams, row), append(l.events, evs...)
		err := f.streams.Write(row)
		for _, e := range evs {
			err = errors.Join(err, f.events.Write(e))
		}
		if err != nil && l.writeErr == nil {
			l.writeErr = err
		}
	})
	run.FastPlanned = fast.Planned
	l.reqs = fast.Reqs
	if l.writeErr == nil {
		l.writeErr = fast.WriteErr
	}
	return l
}
