package lab

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// MatrixResult is what an experiment's matrix wrote: the results
// directory, every run row of the session (resumed ones first) and the
// conditions the stack could not run. An experiment's Result embeds it and
// adds its Print; ReasonsFile and AllFailed come with it.
type MatrixResult[R recorder.Row[R]] struct {
	Dir  string
	Runs []R
	// Skipped names the conditions the stack could not run (an "async"
	// server on a stack without one).
	Skipped []string
}

var _ Reasoned = (*MatrixResult[recorder.UploadRun])(nil)

// ReasonsFile implements Reasoned: R's file (upload-runs.csv, ...) says
// why a run failed.
func (r *MatrixResult[R]) ReasonsFile() string { return recorder.FileName[R]() }

// AllFailed implements Result's AllFailed: there were runs and none of
// them ended ok.
func (r *MatrixResult[R]) AllFailed() bool { return AllFailed(r.Runs, VerdictOf[R]) }

// RunMatrix runs m in env for cfg (the experiment validated cfg and made
// m's specs), after logging each of skipped, and returns what the session
// wrote, also when it ended early (with the error).
func RunMatrix[S Planned, R recorder.Row[R]](ctx context.Context, env *Env, cfg Config, m *Matrix[S, R], skipped []string) (*MatrixResult[R], error) {
	for _, s := range skipped {
		env.Logf("skipped: %s", s)
	}
	res := &MatrixResult[R]{Dir: env.Out, Skipped: skipped}
	var err error
	res.Runs, err = m.Run(ctx, env, cfg)
	return res, err
}

// Plan is an experiment's matrix on the RunFiles[I, R] layout (its item
// file, its run file, requests.csv and resource-samples.csv): its runs,
// what one run measures into the open files, and the progress line of a
// finished run.
type Plan[S Planned, I recorder.Row[I], R recorder.Row[R]] struct {
	// Specs are the runs of the validated config, and the conditions left
	// out of them (logged first).
	Specs func() (specs []S, skipped []string)
	// Expected is what a run's schedule takes, for the progress ETA.
	Expected func(S) time.Duration
	// Measure performs one run (Matrix.Measure) in env writing to f.
	Measure func(ctx context.Context, env *Env, spec S, id string, f *RunFiles[I, R]) (R, error)
	Line    func(R) string
}

// Matrixed is an experiment's Result that embeds MatrixResult[R].
type Matrixed[R recorder.Row[R]] interface {
	Result
	Matrix() *MatrixResult[R]
}

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
	var f *RunFiles[I, R]
	m := &Matrix[S, R]{Specs: specs, Expected: p.Expected, Line: p.Line,
		Measure: func(ctx context.Context, s S, id string) (R, error) { return p.Measure(ctx, env, s, id, f) }}
	UseRunFiles(m, &f)
	mr, err := RunMatrix(ctx, env, cfg, m, skipped)
	*res.Matrix() = *mr
	return res, err
}

// verdictFields are the indices of a run row type's RunID, Status and
// Reason, by type.
var verdictFields sync.Map

// VerdictOf points at run row r's RunID, Status and Reason: string fields
// every recorder run row type has. It panics on a type without them (a
// programming error the experiments' tests meet at once).
func VerdictOf[R any](r *R) Verdict {
	v := reflect.ValueOf(r).Elem()
	idx, ok := verdictFields.Load(v.Type())
	if !ok {
		idx = verdictIndex(v.Type())
		verdictFields.Store(v.Type(), idx)
	}
	at := idx.([3][]int)
	str := func(i int) *string { return v.FieldByIndex(at[i]).Addr().Interface().(*string) }
	return Verdict{ID: str(0), Status: str(1), Reason: str(2)}
}

func verdictIndex(t reflect.Type) [3][]int {
	var at [3][]int
	for i, name := range []string{"RunID", "Status", "Reason"} {
		f, ok := t.FieldByName(name)
		if !ok || f.Type.Kind() != reflect.String {
			panic(fmt.Sprintf("lab: run row %s has no string field %s", t, name))
		}
		at[i] = f.Index
	}
	return at
}

// StatusText is a run's status for its progress line: the status, and
// its reason after a colon when it has one.
func StatusText(status, reason string) string {
	if reason != "" {
		return status + ": " + reason
	}
	return status
}
