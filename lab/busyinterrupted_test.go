package lab

import (
	"context"
	"testing"

	"github.com/slowlab/slowlab/lab/hostguard"
	"github.com/slowlab/slowlab/recorder"
)

// TestBusyThenInterruptedKeepsItsReason: a run whose context ended with
// the host guard's cause once the session itself was interrupted is not
// the guard's: it is aborted with its own reason after "interrupted: ",
// and not tried again. The session's context carries the guard's cause
// here (the guard is off), which is what the run sees when the guard
// aborted it and the session was then interrupted.
func TestBusyThenInterruptedKeepsItsReason(t *testing.T) {
	cooldown(t, 0)
	session, interrupt := context.WithCancelCause(context.Background())
	defer interrupt(nil)
	var measured []string
	m := sinkMatrix([]repSpec{{0, 1}, {1, 1}},
		func(ctx context.Context, s repSpec, id string) (recorder.Run, error) {
			measured = append(measured, id)
			interrupt(hostguard.ErrHostBusy)
			<-ctx.Done()
			return recorder.Run{RunID: id, Status: recorder.RunFailed, Reason: "its own"}, nil
		})
	runs, err := m.Run(session, &Env{Out: t.TempDir()}, &fakeConfig{Header: Header{Experiment: "fake"}})
	if err == nil {
		t.Error("an interrupted session: no error")
	}
	if len(runs) != 1 || len(measured) != 1 {
		t.Fatalf("%d runs (measured %v), want the one interrupted", len(runs), measured)
	}
	if r := runs[0]; r.Status != recorder.RunAborted || r.Reason != "interrupted: its own" {
		t.Errorf("the interrupted run: %s %q, want aborted, \"interrupted: its own\"", r.Status, r.Reason)
	}
}
