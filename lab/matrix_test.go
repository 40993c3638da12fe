package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/hostguard"
	"github.com/slowlab/slowlab/recorder"
)

// fakeConfig is a Config whose runs the test performs itself.
type fakeConfig struct {
	Header `yaml:",inline"`
	Runs   int `yaml:"runs"`
}

func (c *fakeConfig) Head() *Header                             { return &c.Header }
func (c *fakeConfig) Flags(*flag.FlagSet)                       {}
func (c *fakeConfig) Validate() error                           { return nil }
func (c *fakeConfig) Run(context.Context, *Env) (Result, error) { return nil, nil }

type fakeSpec int

func (s fakeSpec) ID() string { return fmt.Sprintf("cond%d.rep1", int(s)) }

// fakeMatrix is a matrix of n runs; each writes two request rows and its
// run row; measure decides each run's outcome.
func fakeMatrix(n int, measure func(ctx context.Context, s fakeSpec, id string) string) (*Matrix[fakeSpec, recorder.Run], *[]string) {
	var f *RunFiles[recorder.LargeResponse, recorder.Run]
	var measured []string
	specs := make([]fakeSpec, n)
	for i := range specs {
		specs[i] = fakeSpec(i)
	}
	m := &Matrix[fakeSpec, recorder.Run]{Specs: specs, Expected: func(fakeSpec) time.Duration { return time.Second },
		Verdict: func(r *recorder.Run) Verdict {
			return Verdict{ID: &r.RunID, Status: &r.Status, Reason: &r.Reason}
		},
		Line: func(r recorder.Run) string { return r.Status },
		Measure: func(ctx context.Context, s fakeSpec, id string) (recorder.Run, error) {
			measured = append(measured, id)
			for seq := range 2 {
				if err := f.Requests.Write(recorder.Request{RunID: id, Seq: seq, Status: 200}); err != nil {
					return recorder.Run{}, err
				}
			}
			return recorder.Run{RunID: id, Status: measure(ctx, s, id)}, nil
		}}
	UseRunFiles(m, &f)
	return m, &measured
}

func requestRuns(t *testing.T, dir string) map[string]int {
	t.Helper()
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, recorder.FileName[recorder.Request]()))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range rows {
		n[r.RunID]++
	}
	return n
}

// TestMatrixResume: an interrupted session resumed keeps its completed
// runs, drops the rows of the failed and aborted ones from every file and
// runs only those again; a resume with other settings is refused and
// changes nothing.
func TestMatrixResume(t *testing.T) {
	slowlabtest.Timing(t)
	env := &Env{Out: t.TempDir()}
	cfg := &fakeConfig{Header: Header{Experiment: "fake"}, Runs: 3}
	ctx, cancel := context.WithCancel(context.Background())
	m, measured := fakeMatrix(3, func(_ context.Context, s fakeSpec, _ string) string {
		switch s {
		case 0:
			return recorder.RunOK
		case 1:
			return recorder.RunFailed
		}
		cancel()
		return recorder.RunAborted
	})
	runs, err := m.Run(ctx, env, cfg)
	if err == nil || len(runs) != 3 {
		t.Fatalf("interrupted session: %d runs, %v; want 3 and the interruption", len(runs), err)
	}
	if n := requestRuns(t, env.Out); len(n) != 3 {
		t.Fatalf("requests of %v before resume", n)
	}

	other := &fakeConfig{Header: Header{Experiment: "fake"}, Runs: 4}
	env.Resume, env.Scenario = true, nil
	if _, err := m.Run(context.Background(), env, other); err == nil || !strings.Contains(err.Error(), "runs: 3 -> 4") {
		t.Fatalf("resume with other settings: %v", err)
	}
	env.Scenario = nil
	m, measured = fakeMatrix(3, func(context.Context, fakeSpec, string) string { return recorder.RunOK })
	runs, err = m.Run(context.Background(), env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(*measured, " ") != "cond1.rep1 cond2.rep1" {
		t.Errorf("resume measured %v, want the failed and the aborted run only", *measured)
	}
	if len(runs) != 3 || runs[0].RunID != "cond0.rep1" || AllFailed(runs, m.Verdict) {
		t.Errorf("runs after resume: %+v", runs)
	}
	if n := requestRuns(t, env.Out); len(n) != 3 || n["cond0.rep1"] != 2 || n["cond1.rep1"] != 2 || n["cond2.rep1"] != 2 {
		t.Errorf("requests per run after resume %v, want 2 each, once", n)
	}
	kept, _ := recorder.ReadFile[recorder.Run](filepath.Join(env.Out, recorder.FileName[recorder.Run]()))
	if len(kept) != 3 {
		t.Errorf("%d run rows after resume, want 3 (the first session's failed and aborted ones dropped)", len(kept))
	}
}

// TestMatrixFailedInterrupted: a run that fails because the session was
// interrupted during it (slow-client's instruments failed to start with
// "context canceled" when SIGINT came as its stack started) is aborted, in
// the rows returned and in the runs file, its reason kept; a failure
// before the interruption stays failed.
func TestMatrixFailedInterrupted(t *testing.T) {
	env := &Env{Out: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, _ := fakeMatrix(3, func(_ context.Context, s fakeSpec, _ string) string {
		switch s {
		case 0:
			return recorder.RunOK
		case 1:
			return recorder.RunFailed
		}
		cancel()
		return recorder.RunFailed
	})
	runs, err := m.Run(ctx, env, &fakeConfig{Header: Header{Experiment: "fake"}, Runs: 3})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted session: %v, want context.Canceled", err)
	}
	onDisk, rerr := recorder.ReadFile[recorder.Run](filepath.Join(env.Out, recorder.FileName[recorder.Run]()))
	if rerr != nil {
		t.Fatal(rerr)
	}
	for name, rows := range map[string][]recorder.Run{"returned": runs, "runs file": onDisk} {
		var got []string
		for _, r := range rows {
			got = append(got, r.Status)
		}
		if strings.Join(got, " ") != "ok failed aborted" {
			t.Errorf("%s: statuses %v, want ok failed aborted", name, got)
		}
		if len(rows) == 3 && rows[2].Reason != "interrupted: " {
			t.Errorf("%s: the interrupted run's reason %q, want \"interrupted: \" and its own (empty here)", name, rows[2].Reason)
		}
	}
}

// TestMatrixHostBusy: with the default guard and every CPU kept busy by
// processes outside the session, every run is aborted with the guard's
// reason and tried again as .try2 and .try3; AllFailed then holds.
func TestMatrixHostBusy(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs a matrix for seconds")
	cooldown(t, 10*time.Millisecond)
	slowlabtest.BusyCPUs(t)
	// A run ends when the guard cancels it or, failing that, after the
	// guard measured ten intervals: the guard's readings are the events.
	intervals := make(chan hostguard.Usage, 100)
	hostguard.Observed = func(u hostguard.Usage) { intervals <- u }
	t.Cleanup(func() { hostguard.Observed = nil })
	env := &Env{Out: t.TempDir(), MaxHostCPU: DefaultMaxHostCPU}
	m, measured := fakeMatrix(1, func(ctx context.Context, _ fakeSpec, _ string) string {
		for n := 0; n < 10; {
			select {
			case <-ctx.Done():
				return recorder.RunAborted
			case u := <-intervals:
				t.Logf("interval: %+v", u)
				n++
			}
		}
		return recorder.RunOK
	})
	runs, err := m.Run(context.Background(), env, &fakeConfig{Header: Header{Experiment: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(*measured, " ") != "cond0.rep1 cond0.rep1.try2 cond0.rep1.try3" {
		t.Errorf("tries %v", *measured)
	}
	for _, r := range runs {
		if r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU used outside this session") {
			t.Errorf("run %s: %s %q, want aborted for host CPU", r.RunID, r.Status, r.Reason)
		}
	}
	if !AllFailed(runs, m.Verdict) {
		t.Error("AllFailed false with every run aborted")
	}
}

// TestMatrixOwnLoad: a run that keeps every CPU busy itself, in the
// session's own process, is not aborted by the default guard: it runs
// until the guard has seen the host busier than --max-host-cpu for three
// intervals in a row (the old guard, which judged the whole host, aborted
// it after two), and ends ok.
func TestMatrixOwnLoad(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs an experiment on the embedded stack")
	busy := make(chan struct{})
	var once sync.Once
	over := 0
	hostguard.Observed = func(u hostguard.Usage) {
		if over++; u.Host <= DefaultMaxHostCPU/100.0 {
			over = 0
		}
		if over == 3 {
			once.Do(func() { close(busy) })
		}
	}
	t.Cleanup(func() { hostguard.Observed = nil })
	env := &Env{Out: t.TempDir(), MaxHostCPU: DefaultMaxHostCPU}
	m, _ := fakeMatrix(1, func(ctx context.Context, _ fakeSpec, _ string) string {
		spin, stop := context.WithCancel(ctx)
		defer stop()
		for range runtime.NumCPU() {
			go slowlabtest.Spin(spin)
		}
		select {
		case <-busy:
			return recorder.RunOK
		case <-ctx.Done():
			return recorder.RunAborted
		}
	})
	runs, err := m.Run(context.Background(), env, &fakeConfig{Header: Header{Experiment: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			t.Errorf("run %s: %s %q, want ok: the session's own load is not counted", r.RunID, r.Status, r.Reason)
		}
	}
	if len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
}

// TestMatrixScheduleLag: with --max-schedule-lag 1s, an ok run whose load
// generator fell 2.5 s behind is aborted as a stalled instrument and
// tried again; the try that kept its schedule stands. A failed run is
// left as it is, and rows that record no lag are not judged.
func TestMatrixScheduleLag(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs a matrix for seconds")
	cooldown(t, 10*time.Millisecond)
	lags := map[string]float64{"cond0.rep1": 2500, "cond0.rep1.try2": 12, "cond1.rep1": 2500}
	status := map[string]string{"cond1.rep1": recorder.RunFailed}
	var measured []string
	m := sinkMatrix([]fakeSpec{0, 1},
		func(ctx context.Context, s fakeSpec, id string) (recorder.Run, error) {
			measured = append(measured, id)
			st := status[id]
			if st == "" {
				st = recorder.RunOK
			}
			return recorder.Run{RunID: id, Status: st, MaxScheduleLagMS: recorder.Some(lags[id])}, nil
		})
	env := &Env{Out: t.TempDir(), MaxScheduleLag: time.Second}
	runs, err := m.Run(context.Background(), env, &fakeConfig{Header: Header{Experiment: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(measured, " ") != "cond0.rep1 cond0.rep1.try2 cond1.rep1" {
		t.Errorf("tries %v, want the late ok run tried again, the failed one not", measured)
	}
	want := []string{recorder.RunAborted, recorder.RunOK, recorder.RunFailed}
	for i, r := range runs {
		if r.Status != want[i] {
			t.Errorf("run %s: %s %q, want %s", r.RunID, r.Status, r.Reason, want[i])
		}
	}
	if r := runs[0]; !strings.Contains(r.Reason, "2500 ms behind its schedule, over --max-schedule-lag 1s") {
		t.Errorf("reason %q", r.Reason)
	}
	env.MaxScheduleLag = 0
	measured = nil
	if runs, _ := m.Run(context.Background(), &Env{Out: t.TempDir()}, &fakeConfig{Header: Header{Experiment: "fake"}}); runs[0].Status != recorder.RunOK {
		t.Errorf("without --max-schedule-lag: %s %q, want ok", runs[0].Status, runs[0].Reason)
	}
}

// rowSink discards rows.
type rowSink[R any] struct{}

func (rowSink[R]) Write(R) error { return nil }

// sinkMatrix is a matrix of specs whose runs measure gives, each expected
// to take a second, its rows discarded.
func sinkMatrix[S Planned](specs []S, measure func(ctx context.Context, s S, id string) (recorder.Run, error)) *Matrix[S, recorder.Run] {
	return &Matrix[S, recorder.Run]{Specs: specs, Expected: func(S) time.Duration { return time.Second },
		Line: func(r recorder.Run) string { return r.Status },
		Open: func(dir string, resume bool) (RowWriter[recorder.Run], func() error, error) {
			return rowSink[recorder.Run]{}, func() error { return nil }, nil
		},
		Measure: measure}
}

// cooldown sets HostBusyCooldown to d for the test.
func cooldown(t *testing.T, d time.Duration) {
	saved := HostBusyCooldown
	HostBusyCooldown = d
	t.Cleanup(func() { HostBusyCooldown = saved })
}

// TestMatrixUnmeasured: a matrix that completes with a condition none of
// whose runs ended ok notes it in the session, whose Unmeasured names it
// and the runs file (ErrUnmeasured); a condition with one ok repetition
// is measured. A run id's condition is the id less .repN and .tryN.
func TestMatrixUnmeasured(t *testing.T) {
	failed := map[string]bool{"cond0.rep1": true, "cond2.rep1": true, "cond2.rep2": true}
	m := sinkMatrix([]repSpec{{0, 1}, {0, 2}, {1, 1}, {2, 1}, {2, 2}},
		func(ctx context.Context, s repSpec, id string) (recorder.Run, error) {
			if failed[id] {
				return recorder.Run{RunID: id, Status: recorder.RunFailed, Reason: "broken"}, nil
			}
			return recorder.Run{RunID: id, Status: recorder.RunOK}, nil
		})
	env := &Env{Out: t.TempDir(), unmeasured: &unmeasured{}}
	if _, err := m.Run(context.Background(), env, &fakeConfig{Header: Header{Experiment: "fake"}}); err != nil {
		t.Fatal(err)
	}
	err := env.Unmeasured()
	want := "1 condition without a valid run: cond2 (the reasons are in " + filepath.Join(env.Out, "runs.csv") + ")"
	if !errors.Is(err, ErrUnmeasured) || err == nil || err.Error() != want {
		t.Errorf("Unmeasured: %v, want %q", err, want)
	}
	for id, want := range map[string]string{"a.b.rep3": "a.b", "a.b.rep12.try3": "a.b", "latency-gap.100B.50ms": "latency-gap.100B.50ms", "a.try2": "a", "a.rep1x": "a.rep1x"} {
		if got := ConditionOf(id); got != want {
			t.Errorf("ConditionOf(%q) = %q, want %q", id, got, want)
		}
	}
	if err := (&Env{}).Unmeasured(); err != nil {
		t.Errorf("an Env without a session: %v", err)
	}
}

// repSpec is a run of condition cond, repetition rep.
type repSpec struct{ cond, rep int }

func (s repSpec) ID() string { return fmt.Sprintf("cond%d.rep%d", s.cond, s.rep) }
