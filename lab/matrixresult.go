package lab

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// MatrixResult is what an experiment's matrix wrote: the results
// directory, every run row of the session (resumed ones first) and the
// conditions the stack could not run. An experiment's Result embeds it and
// adds its Print; ReasonsFile and AllFailed come with it.
type MatrixResult[R recorder.RunRow[R]] struct {
	Dir  string
	Runs []R
	// Skipped names the conditions the stack could not run (an "async"
	// server on a stack without one).
	Skipped []string
}

var _ Reasoned = (*MatrixResult[recorder.Run])(nil)

// ReasonsFile implements Reasoned: R's file (upload-runs.csv, ...) says
// why a run failed.
func (r *MatrixResult[R]) ReasonsFile() string { return recorder.FileName[R]() }

// AllFailed implements Result's AllFailed: there were runs and none of
// them ended ok.
func (r *MatrixResult[R]) AllFailed() bool { return AllFailed(r.Runs, VerdictOf[R]) }

// RunMatrix runs m in env for cfg (the experiment validated cfg and made
// m's specs), after logging each of skipped, and returns what the session
// wrote, also when it ended early (with the error).
func RunMatrix[S Planned, R recorder.RunRow[R]](ctx context.Context, env *Env, cfg Config, m *Matrix[S, R], skipped []string) (*MatrixResult[R], error) {
	for _, s := range skipped {
		env.Logf("skipped: %s", s)
	}
	runs, err := m.Run(ctx, env, cfg)
	return &MatrixResult[R]{Dir: env.Out, Runs: runs, Skipped: skipped}, err
}

// Plan is an experiment's matrix on the RunFiles[I, R] layout (its item
// file, its run file, requests.csv and resource-samples.csv): its runs,
// what one run measures into the open files, and the progress line of a
// finished run.
type Plan[S Planned, I recorder.Row[I], R recorder.RunRow[R]] struct {
	// Specs are the runs of the validated config, and the conditions left
	// out of them (logged first).
	Specs func() (specs []S, skipped []string)
	// Check, when set, refuses the specs before anything starts (a server
	// the stack cannot run them on), naming why.
	Check func(specs []S) error
	// Expected is what a run's schedule takes, for the progress ETA.
	Expected func(S) time.Duration
	// Measure performs one run (Matrix.Measure) in env writing to f.
	Measure func(ctx context.Context, env *Env, spec S, id string, f *RunFiles[I, R]) (R, error)
	Line    func(R) string
}

// Matrixed is an experiment's Result that embeds MatrixResult[R].
type Matrixed[R recorder.RunRow[R]] interface {
	Result
	Matrix() *MatrixResult[R]
}

func (r *MatrixResult[R]) skippedConds() []string { return r.Skipped }

// Matrix implements Matrixed: the embedded result Plan.Run fills.
func (r *MatrixResult[R]) Matrix() *MatrixResult[R] { return r }

// Run validates cfg, then runs the plan in env for it through the one run
// loop (Matrix with UseRunFiles: resume, the host-CPU guard, progress,
// interruption) and returns res with what the session wrote, also when
// it ended early (with the error); an invalid cfg returns no result.
func (p Plan[S, I, R]) Run(ctx context.Context, env *Env, cfg Config, res Matrixed[R]) (Result, error) {
	if err := RefuseExternal(cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	specs, skipped := p.Specs()
	if p.Check != nil {
		if err := p.Check(specs); err != nil {
			return nil, err
		}
	}
	var f *RunFiles[I, R]
	m := &Matrix[S, R]{Specs: specs, Expected: p.Expected, Line: p.Line,
		Measure: func(ctx context.Context, s S, id string) (R, error) { return p.Measure(ctx, env, s, id, f) }}
	UseRunFiles(m, &f)
	mr, err := RunMatrix(ctx, env, cfg, m, skipped)
	*res.Matrix() = *mr
	return res, err
}

// VerdictOf points at run row r's RunID, Status and Reason.
func VerdictOf[R recorder.RunRow[R]](r *R) Verdict {
	var zero R
	id, status, reason := zero.VerdictFields(r)
	return Verdict{ID: id, Status: status, Reason: reason}
}

// StatusText is a run's status for its progress line: the status, and
// its reason after a colon when it has one.
func StatusText(status, reason string) string {
	if reason != "" {
		return status + ": " + reason
	}
	return status
}
