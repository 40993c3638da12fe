package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab/hostguard"
	"github.com/slowlab/slowlab/recorder"
)

// Planned is one run of an experiment's matrix, as its spec says.
type Planned interface {
	// ID is the run's id (route.server.condition.repN); a retry of it is
	// ID.tryN.
	ID() string
}

// RowWriter writes one row of a results file.
type RowWriter[R any] interface{ Write(R) error }

// Matrix is the one run loop every experiment on a stack uses. The
// experiment supplies its runs, what one run measures and how its run row
// shows a verdict; the loop owns the rest: the results directory, resume
// (--resume: completed runs are kept, every other run's rows dropped from
// each results file, and only the rest run), the session's record, the
// host-CPU guard (--max-host-cpu: a run aborted because the host was busy
// with work outside the session is recorded and tried again as ID.try2,
// ID.try3 after a cooldown), progress lines, and stopping at the first
// fault that lost results or at an interruption, with everything measured
// so far kept. A matrix that completes with conditions left without a
// valid run notes them in the session (Env.NoteUnmeasured), whose end
// names them.
type Matrix[S Planned, R recorder.RunRow[R]] struct {
	Specs []S
	// Expected is what a run's schedule takes, for the progress ETA.
	Expected func(S) time.Duration
	// Files names the results files the experiment writes besides its
	// runs file R; on resume each keeps only the completed runs' rows.
	Files []string
	// Open creates the session's results files in dir, or opens them to
	// append when resume is set, and returns the writer of its run rows
	// and what closes every file.
	Open func(dir string, resume bool) (runs RowWriter[R], close func() error, err error)
	// Measure performs one run of spec as run id. Its error is only for
	// results that could not be written (the loop then stops); a run that
	// failed is a row with a failed status.
	Measure func(ctx context.Context, spec S, id string) (R, error)
	// Verdict points at a run row's id, status and reason; nil is
	// VerdictOf.
	Verdict func(*R) Verdict
	// Line is the progress line of a finished run.
	Line func(R) string
}

// HostBusyRetries is how many more times a run the host guard aborted is
// tried; HostBusyCooldown is the pause before each try.
var (
	HostBusyRetries  = 2
	HostBusyCooldown = 5 * time.Second
)

// Run runs the matrix in env for cfg and returns every run row of the
// session, resumed ones first, also when it ended early (with the error).
func (m *Matrix[S, R]) Run(ctx context.Context, env *Env, cfg Config) ([]R, error) {
	if m.Verdict == nil {
		m.Verdict = VerdictOf[R]
	}
	if err := os.MkdirAll(env.LogDir(), 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	var done []R
	if env.Resume {
		var err error
		if done, err = m.resume(env, cfg); err != nil {
			return nil, err
		}
	}
	runs, closeFiles, err := m.Open(env.Out, env.Resume)
	if err != nil {
		return nil, err
	}
	if err := RecordSession(env, cfg); err != nil {
		return nil, errors.Join(err, closeFiles())
	}
	var todo []S
	for _, s := range m.Specs {
		if !m.completed(done, s) {
			todo = append(todo, s)
		}
	}
	if env.Resume {
		env.Logf("resume: %d runs completed in %s, %d to run", len(done), env.Out, len(todo))
	}
	all, runErr := m.loop(ctx, env, todo, runs, done)
	if runErr == nil {
		env.NoteUnmeasured(filepath.Join(env.Out, recorder.FileName[R]()), unmeasuredOf(m.Specs, all, m.Verdict)...)
	}
	return all, errors.Join(runErr, closeFiles())
}

// resume checks env.Out was run with the same scenario, keeps its
// completed runs and drops every other run's rows from each file.
func (m *Matrix[S, R]) resume(env *Env, cfg Config) ([]R, error) {
	if err := CheckResume(env, cfg); err != nil {
		return nil, err
	}
	name := recorder.FileName[R]()
	rows, err := recorder.ReadFile[R](filepath.Join(env.Out, name))
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	ok := map[string]bool{}
	var done []R
	for i := range rows {
		if v := m.Verdict(&rows[i]); *v.Status == recorder.RunOK {
			ok[*v.ID] = true
			done = append(done, rows[i])
		}
	}
	for _, f := range append([]string{name}, m.Files...) {
		if err := recorder.KeepRuns(env.Out, f, func(id string) bool { return ok[id] }); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// completed reports whether done has an ok run of s (any try).
func (m *Matrix[S, R]) completed(done []R, s S) bool {
	for i := range done {
		if id := *m.Verdict(&done[i]).ID; id == s.ID() || strings.HasPrefix(id, s.ID()+".try") {
			return true
		}
	}
	return false
}

// loop runs specs in order until all ran, a fault lost results, or ctx
// ends.
func (m *Matrix[S, R]) loop(ctx context.Context, env *Env, specs []S, runs RowWriter[R], all []R) ([]R, error) {
	guard := hostguard.NewGuard(env.MaxHostCPU, "")
	guard.SetMaxLag(env.MaxScheduleLag)
	p := NewProgress(env.Progress, len(specs), func(i int) time.Duration { return m.Expected(specs[i]) })
	for i, spec := range specs {
		for try := 1; ; try++ {
			id := spec.ID()
			if try > 1 {
				id = fmt.Sprintf("%s.try%d", id, try)
			}
			p.Start(i, id)
			run, busy, err := m.one(ctx, guard, spec, id)
			if werr := runs.Write(run); werr != nil {
				err = errors.Join(err, werr)
			}
			all = append(all, run)
			p.Done(i, "%s", m.Line(run))
			if err != nil || ctx.Err() != nil {
				return all, errors.Join(err, ctx.Err())
			}
			if !busy || try > HostBusyRetries {
				break
			}
			p.Note("host too busy; cooling down %s before trying again", HostBusyCooldown)
			select {
			case <-time.After(HostBusyCooldown):
			case <-ctx.Done():
				return all, ctx.Err()
			}
		}
	}
	return all, nil
}

// one performs one run under the host guard; busy reports that the guard
// aborted it (its reason then says why). A run that failed once the
// session was interrupted is aborted: the interruption, not the stack,
// ended whatever step it was in (starting the instruments, say).
func (m *Matrix[S, R]) one(parent context.Context, guard *hostguard.Guard, spec S, id string) (R, bool, error) {
	ctx, stop := guard.Watch(parent)
	defer stop()
	run, err := m.Measure(ctx, spec, id)
	v := m.Verdict(&run)
	if parent.Err() != nil && *v.Status == recorder.RunFailed {
		*v.Status, *v.Reason = recorder.RunAborted, "interrupted: "+*v.Reason
	}
	if parent.Err() == nil && errors.Is(context.Cause(ctx), hostguard.ErrHostBusy) {
		*v.Status, *v.Reason = recorder.RunAborted, guard.Why()
		return run, true, err
	}
	if *v.Status == recorder.RunOK {
		if why := guard.Late(&run); why != "" {
			*v.Status, *v.Reason = recorder.RunAborted, why
			return run, true, err
		}
	}
	return run, false, err
}

// Verdict points at the fields of a run row that say which run it is and
// how it ended.
type Verdict struct{ ID, Status, Reason *string }

// AllFailed reports whether runs has runs and none of them is ok: the
// session measured nothing.
func AllFailed[R any](runs []R, verdict func(*R) Verdict) bool {
	for i := range runs {
		if *verdict(&runs[i]).Status == recorder.RunOK {
			return false
		}
	}
	return len(runs) > 0
}
