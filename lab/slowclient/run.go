package slowclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
func (r *Result) AllFailed() bool {
	for _, run := range r.Runs {
		if run.Status == recorder.RunOK {
			return false
		}
	}
	return len(r.Runs) > 0
}

// A run aborted because the host was busy is tried up to maxRetries more
// times, after a cooldown.
const maxRetries = 2

var cooldown = 5 * time.Second

// Run implements lab.Config: it runs the whole matrix and writes the
// results directory. A run that fails (a child dies, the stack does not
// start, a download is cut) is recorded as failed with its reason and the
// next run goes on. A run aborted because the host was too busy
// (Env.MaxHostCPU) is recorded as aborted and tried again, as RUN_ID.try2
// and so on. Cancelling ctx marks the current run aborted, keeps
// everything measured so far, writes conditions.csv from the completed
// runs and returns ctx's error. With Env.Resume, the completed runs
// already in Env.Out are kept and only the others run.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	t, done, err := c.open(env)
	if err != nil {
		return nil, err
	}
	defer t.close()
	res := &Result{Dir: env.Out, Runs: done}
	var specs []RunSpec
	for _, spec := range c.Runs() {
		if !completed(done, spec) {
			specs = append(specs, spec)
		}
	}
	if env.Resume {
		env.Logf("resume: %d runs completed in %s, %d to run", len(done), env.Out, len(specs))
	}
	runErr := c.matrix(ctx, env, specs, t, res)
	res.SamplingJitter = t.jitter
	res.Conditions = recorder.SummarizeConditions(res.Runs)
	return res, errors.Join(runErr, writeConditions(env.Out, res.Conditions), t.close())
}

// open creates the results directory and its tables, or reopens them to
// resume, and records the session's environment.
func (c *Config) open(env *lab.Env) (*tables, []recorder.Run, error) {
	if err := os.MkdirAll(env.LogDir(), 0o755); err != nil {
		return nil, nil, fmt.Errorf("results directory: %w", err)
	}
	var t *tables
	var done []recorder.Run
	var err error
	if env.Resume {
		if err = lab.CheckResume(env, c); err == nil {
			t, done, err = resumeTables(env.Out)
		}
	} else {
		t, err = createTables(env.Out)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := lab.RecordSession(env, c); err != nil {
		t.close()
		return nil, nil, err
	}
	return t, done, nil
}

// matrix runs specs in order, trying a run the host guard aborted again,
// until all ran or ctx ends.
func (c *Config) matrix(ctx context.Context, env *lab.Env, specs []RunSpec, t *tables, res *Result) error {
	guard := lab.NewGuard(env.MaxHostCPU, "")
	pool := lab.NewPool(env)
	defer pool.Close()
	p := lab.NewProgress(env.Progress, len(specs), func(i int) time.Duration { return c.Duration(specs[i].SlowClients) })
	for i, spec := range specs {
		for try := 1; ; try++ {
			id := spec.ID()
			if try > 1 {
				id = fmt.Sprintf("%s.try%d", id, try)
			}
			p.Start(i, id)
			run, busy, err := c.runOne(ctx, env, spec, id, t, guard, pool)
			if werr := t.runs.Write(run); werr != nil && err == nil {
				err = werr
			}
			res.Runs = append(res.Runs, run)
			p.Done(i, "%s", runLine(run))
			if err != nil || ctx.Err() != nil {
				return errors.Join(err, ctx.Err())
			}
			if !busy || try > maxRetries {
				break
			}
			p.Note("host too busy; cooling down %s before trying again", cooldown)
			select {
			case <-time.After(cooldown):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// runOne performs one run under the host guard. Its error is only for
// faults that must stop the matrix (writing results failed); a failed run
// is a Run with Status failed. busy reports that the guard aborted it.
func (c *Config) runOne(parent context.Context, env *lab.Env, spec RunSpec, id string, t *tables, guard *lab.Guard, pool *lab.Pool) (recorder.Run, bool, error) {
	ctx, stopGuard := guard.Watch(parent)
	defer stopGuard()
	run, err := c.measure(ctx, env, spec, id, t, pool)
	if run.Status == recorder.RunAborted && parent.Err() == nil && errors.Is(context.Cause(ctx), lab.ErrHostBusy) {
		run.Reason = guard.Why()
		return run, true, err
	}
	return run, false, err
}

// completed reports whether runs has a completed run of spec (any try).
func completed(runs []recorder.Run, spec RunSpec) bool {
	for _, r := range runs {
		if r.Status == recorder.RunOK && (r.RunID == spec.ID() || strings.HasPrefix(r.RunID, spec.ID()+".try")) {
			return true
		}
	}
	return false
}

// writeConditions replaces conditions.csv with the summary of every run.
func writeConditions(dir string, conds []recorder.Condition) error {
	os.Remove(filepath.Join(dir, recorder.FileName[recorder.Condition]()))
	cw, err := recorder.CreateFile[recorder.Condition](dir)
	if err != nil {
		return err
	}
	for _, c := range conds {
		if err := cw.Write(c); err != nil {
			return errors.Join(err, cw.Close())
		}
	}
	return cw.Close()
}

// runLine is the progress line of a finished run.
func runLine(r recorder.Run) string {
	status := r.Status
	if r.Reason != "" {
		status += ": " + r.Reason
	}
	return fmt.Sprintf("fast %d/%d ok (%d of %d planned sent), p50 %s ms, p95 %s ms, max lag %s ms; receive %s s, app_send %s s  [%s]",
		r.FastOK, r.FastTotal, r.FastSent, r.FastPlanned, lab.Num(r.P50MS, 1), lab.Num(r.P95MS, 1), lab.Num(r.MaxScheduleLagMS, 2),
		lab.Num(r.ClientReceiveS, 2), lab.Num(r.AppSendS, 2), status)
}
