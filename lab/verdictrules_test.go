package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// TestMatrixRetriesBounded: a run judged late at every try (--max-schedule-lag)
// is tried HostBusyRetries times more, then left aborted; a failed run,
// however late, is left failed and not tried again.
func TestMatrixRetriesBounded(t *testing.T) {
	cooldown(t, 0)
	var measured []string
	m := sinkMatrix([]repSpec{{0, 1}, {1, 1}},
		func(ctx context.Context, s repSpec, id string) (recorder.Run, error) {
			measured = append(measured, id)
			st := recorder.RunOK
			if s.cond == 1 {
				st = recorder.RunFailed
			}
			return recorder.Run{RunID: id, Status: st, Reason: "its own", MaxScheduleLagMS: recorder.Some(2500)}, nil
		})
	runs, err := m.Run(context.Background(), &Env{Out: t.TempDir(), MaxScheduleLag: time.Second}, &fakeConfig{Header: Header{Experiment: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(measured, " "), "cond0.rep1 cond0.rep1.try2 cond0.rep1.try3 cond1.rep1"; got != want || HostBusyRetries != 2 {
		t.Errorf("tries %s, want %s", got, want)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Status)
	}
	if strings.Join(got, " ") != "aborted aborted aborted failed" || runs[3].Reason != "its own" {
		t.Errorf("statuses %v (last %q), want three late tries aborted and the failed run failed, its reason kept", got, runs[3].Reason)
	}
}

// TestMatrixCompletedIsThatRun: on resume, a spec is done by an ok run
// of its own id or a retry of it, never by another spec's id that starts
// with its own (rep1 and rep10).
func TestMatrixCompletedIsThatRun(t *testing.T) {
	m := &Matrix[repSpec, recorder.Run]{Verdict: VerdictOf[recorder.Run]}
	for _, tc := range []struct {
		done string
		spec repSpec
		want bool
	}{
		{"cond0.rep1", repSpec{0, 1}, true},
		{"cond0.rep1.try2", repSpec{0, 1}, true},
		{"cond0.rep10", repSpec{0, 1}, false},
		{"cond0.rep1", repSpec{0, 10}, false},
	} {
		if got := m.completed([]recorder.Run{{RunID: tc.done, Status: recorder.RunOK}}, tc.spec); got != tc.want {
			t.Errorf("%s done: %s completed %v, want %v", tc.done, tc.spec.ID(), got, tc.want)
		}
	}
}

// TestAccountedEitherWay: a run fails with more rows than it planned as
// with fewer; an empty /fast schedule that got requests too.
func TestAccountedEitherWay(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{FastAccounted(5, 4), "5 /fast requests accounted of 4 planned"},
		{FastAccounted(1, 0), "1 /fast requests accounted of 0 planned"},
		{FastAccounted(0, 0), ""},
		{Accounted(3, 2, "streams"), "3 streams accounted of 2"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

// TestUnmeasuredAborted: a condition whose every run was aborted (the
// host busy, interrupted) has no valid run either; named once, however
// many of its runs there were.
func TestUnmeasuredAborted(t *testing.T) {
	runs := []recorder.Run{
		{RunID: "cond0.rep1", Status: recorder.RunAborted}, {RunID: "cond0.rep1.try2", Status: recorder.RunAborted},
		{RunID: "cond0.rep2", Status: recorder.RunAborted}, {RunID: "cond1.rep1", Status: recorder.RunOK},
	}
	got := unmeasuredOf([]repSpec{{0, 1}, {0, 2}, {1, 1}}, runs, VerdictOf[recorder.Run])
	if strings.Join(got, " ") != "cond0" {
		t.Errorf("unmeasured %v, want [cond0]", got)
	}
}

// TestUnmeasuredNamesOnlyConditions: a matrix of a session that left no
// condition unmeasured adds nothing to the session's error, however many
// other matrices did.
func TestUnmeasuredNamesOnlyConditions(t *testing.T) {
	env := &Env{unmeasured: &unmeasured{}}
	env.NoteUnmeasured("a/runs.csv")
	env.NoteUnmeasured("b/runs.csv", "cond2")
	env.NoteUnmeasured("c/runs.csv")
	if err := env.Unmeasured(); err == nil || err.Error() != "1 condition without a valid run: cond2 (the reasons are in b/runs.csv)" {
		t.Errorf("Unmeasured: %v, want cond2's only", err)
	}
}
