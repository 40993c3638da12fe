package lab

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// MatrixResult's AllFailed: runs and none ok; its ReasonsFile: the run
// rows' file.
func TestMatrixResult(t *testing.T) {
	r := &MatrixResult[recorder.Run]{}
	if r.AllFailed() {
		t.Error("no runs: all failed")
	}
	r.Runs = []recorder.Run{{RunID: "a", Status: recorder.RunFailed}, {RunID: "b", Status: recorder.RunAborted}}
	if !r.AllFailed() {
		t.Error("a failed and an aborted run: not all failed")
	}
	r.Runs = append(r.Runs, recorder.Run{RunID: "c", Status: recorder.RunOK})
	if r.AllFailed() {
		t.Error("an ok run: all failed")
	}
	if got, want := r.ReasonsFile(), recorder.FileName[recorder.Run](); got != want {
		t.Errorf("reasons file %q, want %q", got, want)
	}
}

// VerdictOf points at the row's own fields (a type without them is no
// recorder.RunRow and does not compile as one).
func TestVerdictOf(t *testing.T) {
	run := recorder.Run{RunID: "x.rep1"}
	v := VerdictOf(&run)
	*v.Status, *v.Reason = recorder.RunFailed, "why"
	if *v.ID != "x.rep1" || run.Status != recorder.RunFailed || run.Reason != "why" {
		t.Errorf("verdict of %+v: %q %q %q", run, *v.ID, *v.Status, *v.Reason)
	}
}

// Judge: the interruption first, then (with no dead component) the first
// given reason; unwritten rows fail the run whatever else.
func TestJudgeOrder(t *testing.T) {
	ok := context.Background()
	for _, c := range []struct {
		name     string
		ctx      context.Context
		write    error
		reasons  []string
		status   string
		reasonOf string
	}{
		{"ok", ok, nil, []string{"", ""}, recorder.RunOK, ""},
		{"first reason", ok, nil, []string{"", "evidence", FastAccounted(3, 4)}, recorder.RunFailed, "evidence"},
		{"fast", ok, nil, []string{FastAccounted(3, 4)}, recorder.RunFailed, "3 /fast requests accounted of 4 planned"},
		{"unplanned", ok, nil, []string{FastAccounted(3, -1)}, recorder.RunOK, ""},
		{"clients", ok, nil, []string{Accounted(1, 2, "streams")}, recorder.RunFailed, "1 streams accounted of 2"},
		{"every client", ok, nil, []string{Accounted(2, 2, "streams")}, recorder.RunOK, ""},
		{"interrupted", cancelled(), nil, []string{"evidence"}, recorder.RunAborted, "interrupted: context canceled"},
		{"unwritten", cancelled(), errors.New("disk full"), nil, recorder.RunFailed, "results not all written: disk full"},
	} {
		run := recorder.Run{Status: recorder.RunOK}
		err := Judge(c.ctx, VerdictOf(&run), nil, c.write, c.reasons...)
		if run.Status != c.status || run.Reason != c.reasonOf || !errors.Is(err, c.write) {
			t.Errorf("%s: %q %q (%v), want %q %q", c.name, run.Status, run.Reason, err, c.status, c.reasonOf)
		}
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Plan.Run: the matrix on the RunFiles layout, its skipped conditions in
// the result, every measured run in it with the matrix's verdict.
func TestPlanRun(t *testing.T) {
	env := &Env{Out: t.TempDir()}
	cfg := &fakeConfig{Header: Header{Experiment: "fake"}, Runs: 2}
	p := Plan[fakeSpec, recorder.LargeResponse, recorder.Run]{
		Specs:    func() ([]fakeSpec, []string) { return []fakeSpec{0, 1}, []string{"cond9: no such server"} },
		Expected: func(fakeSpec) time.Duration { return time.Second }, Line: func(r recorder.Run) string { return r.Status },
		Measure: func(_ context.Context, _ *Env, s fakeSpec, id string, f *RunFiles[recorder.LargeResponse, recorder.Run]) (recorder.Run, error) {
			status := recorder.RunOK
			if s == 1 {
				status = recorder.RunFailed
			}
			return recorder.Run{RunID: id, Status: status}, f.Items.Write(recorder.LargeResponse{RunID: id})
		}}
	r, err := p.Run(context.Background(), env, cfg, &planResult{})
	if err != nil {
		t.Fatal(err)
	}
	res := r.(*planResult)
	if res.Dir != env.Out || len(res.Skipped) != 1 || len(res.Runs) != 2 || res.AllFailed() {
		t.Fatalf("result %+v", res)
	}
	rows, err := recorder.ReadFile[recorder.LargeResponse](env.Out + "/" + recorder.FileName[recorder.LargeResponse]())
	if err != nil || len(rows) != 2 {
		t.Errorf("large-responses.csv: %v, %v", rows, err)
	}
}

type planResult struct {
	MatrixResult[recorder.Run]
}

func (*planResult) Print(io.Writer) {}

// An invalid config: Plan.Run runs nothing and returns no result.
func TestPlanRunInvalid(t *testing.T) {
	env := &Env{Out: t.TempDir()}
	p := Plan[fakeSpec, recorder.LargeResponse, recorder.Run]{Specs: func() ([]fakeSpec, []string) {
		t.Fatal("specs made of an invalid config")
		return nil, nil
	}}
	res, err := p.Run(context.Background(), env, &invalidConfig{}, &planResult{})
	if err == nil || res != nil {
		t.Errorf("invalid config: %v, %v", res, err)
	}
}

type invalidConfig struct{ fakeConfig }

func (*invalidConfig) Validate() error { return errors.New("reps 0: allowed 1 to 1000") }

// Failed: a run that could not start is failed with why, or aborted and
// "interrupted: " why when its context ended.
func TestFailed(t *testing.T) {
	run := Failed(context.Background(), recorder.Run{RunID: "a"}, errors.New("start stack: no nginx"))
	if run.Status != recorder.RunFailed || run.Reason != "start stack: no nginx" {
		t.Errorf("failed: %q %q", run.Status, run.Reason)
	}
	run = Failed(cancelled(), recorder.Run{RunID: "a"}, errors.New("start stack: context canceled"))
	if run.Status != recorder.RunAborted || run.Reason != "interrupted: start stack: context canceled" {
		t.Errorf("interrupted: %q %q", run.Status, run.Reason)
	}
}
