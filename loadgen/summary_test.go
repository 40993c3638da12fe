package loadgen

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// A progress line counts as the summary does: sent is the requests that
// are not "not sent" (ok + errors, a skipped one among the errors), and
// the lag p99 is over the requests started.
func TestSummaryProgress(t *testing.T) {
	s := NewSummary()
	if got, want := s.Progress(), "sent 0, ok 0, errors 0, schedule lag p99 -"; got != want {
		t.Errorf("empty: %q, want %q", got, want)
	}
	now := time.Now()
	for _, r := range []Result{
		{Scheduled: true, Start: now, ScheduleLag: 2 * time.Millisecond, Status: 200},
		{Scheduled: true, Start: now, ScheduleLag: time.Millisecond, Err: syscall.ECONNREFUSED},
		{Scheduled: true, ScheduleLag: time.Second, Skipped: true, Err: ErrLate},
		{Scheduled: true, NotSent: true, Err: ErrNotSent},
	} {
		s.Add(r)
	}
	if got, want := s.Progress(), "sent 3, ok 1, errors 2, schedule lag p99 2.000 ms"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	var b strings.Builder
	s.Print(&b)
	if first := strings.SplitN(b.String(), "\n", 2)[0]; first != "requests 4: ok 1, failed 2, not sent 1" {
		t.Errorf("summary %q: the progress line's figures are not its own", first)
	}
}
