package slowclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what a finished (or interrupted) experiment wrote.
type Result struct {
	Dir        string
	Runs       []recorder.Run
	Conditions []recorder.Condition
	// SamplingJitter is how late resource scrapes started, over all runs.
	SamplingJitter recorder.Jitter
}

// AllFailed implements lab.Result.
func (r *Result) AllFailed() bool { return lab.AllFailed(r.Runs, lab.VerdictOf[recorder.Run]) }

// Run implements lab.Config: it runs the whole matrix (lab.Matrix: resume,
// the host-CPU guard and its retries as RUN_ID.try2 and so on, progress)
// and writes the results directory, after a warning for each condition
// whose path may hold the whole response it expects to hold the app
// (MayHold), and before one for each whose downloads it held (Measured).
// A run that fails (a child dies, the stack does not start, a download is
// cut) is recorded as failed with its reason and the next run goes on. Cancelling ctx marks the current run
// aborted, keeps everything measured so far, writes conditions.csv from
// the completed runs and returns ctx's error.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.warnMayHold(env, false)
	t := &tables{}
	pool := lab.NewPool(env)
	defer pool.Close()
	m := &lab.Matrix[RunSpec, recorder.Run]{Specs: c.Runs(), Line: runLine,
		Expected: func(s RunSpec) time.Duration { return c.Duration(s.SlowClients) },
		Measure: func(ctx context.Context, s RunSpec, id string) (recorder.Run, error) {
			return c.measure(ctx, env, s, id, t, pool)
		}}
	// The session creates its files in env.Out, or opens them to append
	// when resuming (lab.Matrix has already dropped the rows of runs that
	// did not complete).
	lab.UseRunFilesWith(m, &t.RunFiles, &t.hops)
	res := &Result{Dir: env.Out}
	var runErr error
	res.Runs, runErr = m.Run(ctx, env, c)
	if res.Runs == nil && runErr != nil {
		return nil, runErr
	}
	res.SamplingJitter = t.jitter
	res.Conditions = recorder.SummarizeConditions(res.Runs)
	c.warnMayHold(env, true)
	return res, errors.Join(runErr, lab.ReplaceRows(env.Out, res.Conditions))
}

// runLine is the progress line of a finished run.
func runLine(r recorder.Run) string {
	return fmt.Sprintf("fast %d/%d ok (%d of %d planned sent), p50 %s ms, p95 %s ms, max lag %s ms; receive %s s, app_send %s s  [%s]",
		r.FastOK, r.FastTotal, r.FastSent, r.FastPlanned, lab.Num(r.P50MS, 1), lab.Num(r.P95MS, 1), lab.Num(r.MaxScheduleLagMS, 2),
		lab.Num(r.ClientReceiveS, 2), lab.Num(r.AppSendS, 2), lab.StatusText(r.Status, r.Reason))
}
