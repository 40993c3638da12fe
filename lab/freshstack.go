package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/slowlab/slowlab/internal/workdir"
	"github.com/slowlab/slowlab/lab/instrument"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// WorkDirPrefix starts the name of every run's scratch directory under
// the system's temp dir, followed by the PID of the session that made it
// and "-", so a leak check finds a session's own (slowlabtest.LeftBehind).
const WorkDirPrefix = workdir.Prefix

// NewWorkDir makes a run's scratch directory (the stack's configs, sockets
// and temp files), named WorkDirPrefix + PID + "-"; its owner removes it
// when the run's stack stopped.
func NewWorkDir() (string, error) { return workdir.New() }

// Fresh is a run's own stack: its work directory, the stack started in it
// and the instruments on it. Stop ends them all.
type Fresh struct {
	Running *stack.Running
	In      *instrument.Instruments
	t0      time.Time
	work    string
	env     *Env
	runID   string
}

// StartFresh starts a stack of its own for run d.RunID (d's LogDir and
// WorkDir are set here) and the instruments on it, for a load generator
// in this process or, with loadChild, a child (InstrumentLoadChild). Its error
// is the reason the run could not start ("work dir: ...", "start stack:
// ...", or the instruments'); it leaves nothing behind then.
func StartFresh(ctx context.Context, env *Env, d stack.Deployment, loadChild bool) (*Fresh, error) {
	place := instrument.LoadEnters
	if loadChild {
		place = instrument.LoadInChild
	}
	return startFresh(ctx, env, d, place)
}

// StartFreshUnlimited is StartFresh for a load generator that must never
// be the bottleneck it measures (assess): it runs in this process, which
// enters no cgroup of the session, so no limit meant for the stack under
// test or the published load generator binds it; the exporter watches
// this process as the load generator.
func StartFreshUnlimited(ctx context.Context, env *Env, d stack.Deployment) (*Fresh, error) {
	return startFresh(ctx, env, d, instrument.LoadFree)
}

func startFresh(ctx context.Context, env *Env, d stack.Deployment, place instrument.Place) (*Fresh, error) {
	work, err := NewWorkDir()
	if err != nil {
		return nil, err
	}
	d.LogDir, d.WorkDir = env.LogDir(), work
	running, err := env.Stack.Start(ctx, d)
	if err != nil {
		os.RemoveAll(work)
		return nil, fmt.Errorf("start stack: %w", err)
	}
	f := &Fresh{Running: running, work: work, env: env, runID: d.RunID}
	if f.In, err = instrument.Start(ctx, env.instruments(), d.RunID, running, place); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	return f, nil
}

// InstrumentLoadChild starts the instruments on running for a run whose
// load generator runs as a child (Instruments.RunLoad): this process
// stays out of the load generator's cgroup, so the published limits
// bound the load generator alone; the exporter watches the cgroup.
func InstrumentLoadChild(ctx context.Context, env *Env, runID string, running *stack.Running) (*instrument.Instruments, error) {
	return instrument.Start(ctx, env.instruments(), runID, running, instrument.LoadInChild)
}

// instruments is what a run's instruments need of the session.
func (e *Env) instruments() instrument.Session {
	limits, ok := e.LoadgenLimits()
	return instrument.Session{LogDir: e.LogDir(), CgroupRoot: e.Stack.CgroupRoot, Loadgen: limits, LimitLoadgen: ok,
		TargetsFile: e.TargetsFile, SampleInterval: e.SampleInterval, RunStarted: e.RunStarted}
}

// Start begins sampling resources into w at t0, the run's start.
func (f *Fresh) Start(t0 time.Time, w *recorder.FileWriter[recorder.ResourceSample]) {
	f.t0 = t0
	f.In.Start(t0, w, f.Running.PIDs())
}

// Resources are what a run's instruments sampled and its summary over
// the load (from the run's start to the load's end).
type Resources struct {
	Samples []recorder.ResourceSample
	Jitter  recorder.Jitter
	// App, Proxy and Loadgen are the components' summaries.
	App, Proxy, Loadgen recorder.ComponentSummary
	TempPeakMiB         recorder.Maybe
}

// Sampled ends the sampling and summarizes it up to end, the load's end.
// Its error is for samples that could not be written.
func (f *Fresh) Sampled(end time.Time) (Resources, error) {
	samples, jitter, err := f.In.Samples()
	comps, temp := recorder.SummarizeResources(samples, 0, end.Sub(f.t0).Seconds())
	return Resources{Samples: samples, Jitter: jitter, App: comps[0], Proxy: comps[1], Loadgen: comps[2], TempPeakMiB: temp}, err
}

// Stop ends the instruments, stops the stack and removes the work
// directory. Safe to call again.
func (f *Fresh) Stop() error {
	var errs []error
	if f.In != nil {
		errs = append(errs, f.In.Stop())
		f.In = nil
	}
	if f.Running != nil {
		errs = append(errs, f.Running.Stop())
		f.Running = nil
	}
	if f.work != "" {
		errs = append(errs, os.RemoveAll(f.work))
		f.work = ""
	}
	return errors.Join(errs...)
}

// Close is Stop for a deferred call: what could not be cleaned up (a
// cgroup still holding a process, a stack that would not stop) is logged
// with the run, not dropped.
func (f *Fresh) Close() {
	if err := f.Stop(); err != nil {
		f.env.Logf("run %s: clean up: %v", f.runID, err)
	}
}

// Fail sets run v failed for reason, or aborted ("interrupted: " and
// reason) when ctx ended: for a run that could not measure.
func Fail(ctx context.Context, v Verdict, reason string) {
	*v.Status, *v.Reason = recorder.RunFailed, reason
	if ctx.Err() != nil {
		*v.Status, *v.Reason = recorder.RunAborted, "interrupted: "+reason
	}
}

// Failed is run with the verdict Fail gives it for err: for a run that
// could not start.
func Failed[R recorder.RunRow[R]](ctx context.Context, run R, err error) R {
	Fail(ctx, VerdictOf(&run), err.Error())
	return run
}

// Judge gives a run on running that measured its verdict v: aborted when
// ctx ended, failed when a component of the stack (if any) died, else failed with
// the first of reasons that is not empty (the experiment's own checks, in
// order), and in any case failed when writeErr says its rows did not all
// reach the results files (the run then must not claim them). It returns
// writeErr, the error of Matrix.Measure.
func Judge(ctx context.Context, v Verdict, running *stack.Running, writeErr error, reasons ...string) error {
	var failed error
	if running != nil {
		failed = running.Failed()
	}
	switch {
	case ctx.Err() != nil:
		*v.Status, *v.Reason = recorder.RunAborted, "interrupted: "+context.Cause(ctx).Error()
	case failed != nil:
		*v.Status, *v.Reason = recorder.RunFailed, failed.Error()
	default:
		for _, r := range reasons {
			if r != "" {
				*v.Status, *v.Reason = recorder.RunFailed, r
				break
			}
		}
	}
	if writeErr != nil {
		*v.Status, *v.Reason = recorder.RunFailed, "results not all written: "+writeErr.Error()
	}
	return writeErr
}

// AppSends is the app's send times by request id (stack.Running.AppSend)
// once each of ids has one, or wait has passed since the call: the app
// writes a response's record after its last write, which can reach the
// client first. Used by stalled-reader and temp-cliff.
func AppSends(ctx context.Context, running *stack.Running, ids []string, wait time.Duration) (map[string]float64, error) {
	deadline := time.Now().Add(wait)
	for {
		sends, err := running.AppSend(ctx)
		missing := slices.ContainsFunc(ids, func(id string) bool { _, ok := sends[id]; return !ok })
		if err != nil || !missing || time.Now().After(deadline) || ctx.Err() != nil {
			return sends, err
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// Reason is the reason a run fails with for err (one of Judge's
// reasons): what, then err's text; "" when err is nil.
func Reason(what string, err error) string {
	if err == nil {
		return ""
	}
	return what + err.Error()
}

// Accounted is the reason a run whose want clients (streams, sockets)
// left got rows fails, or "".
func Accounted(got, want int, what string) string {
	if got != want {
		return fmt.Sprintf("%d %s accounted of %d", got, what, want)
	}
	return ""
}

// FastAccounted is the reason a run whose /fast schedule planned planned
// requests (negative: not known) but accounted total fails, or "".
func FastAccounted(total, planned int) string {
	if planned >= 0 && total != planned {
		return fmt.Sprintf("%d /fast requests accounted of %d planned", total, planned)
	}
	return ""
}
