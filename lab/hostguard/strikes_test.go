package hostguard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// lagRow is a run row that records its load generator's schedule lag.
type lagRow struct {
	ms float64
	ok bool
}

func (r lagRow) MaxLag() (float64, bool) { return r.ms, r.ok }

// TestLateBound: a run is late only past --max-schedule-lag, and only
// when one is set and its row records a lag.
func TestLateBound(t *testing.T) {
	g := NewGuard(0, "")
	g.SetMaxLag(time.Second)
	for _, tc := range []struct {
		run  any
		late bool
	}{
		{lagRow{1000, true}, false},
		{lagRow{1001, true}, true},
		{lagRow{5000, false}, false},
		{struct{}{}, false},
	} {
		if got := g.Late(tc.run); (got != "") != tc.late {
			t.Errorf("%+v: %q, want late %v", tc.run, got, tc.late)
		}
	}
	g.SetMaxLag(0)
	if got := g.Late(lagRow{5000, true}); got != "" {
		t.Errorf("without --max-schedule-lag: %q, want none judged", got)
	}
}

// TestUsageOfNoTime: two readings with no CPU time between them are no
// use at all, never a busy host.
func TestUsageOfNoTime(t *testing.T) {
	if u := usage(reading{}, reading{}); u != (Usage{}) {
		t.Errorf("usage over no time: %+v, want zero", u)
	}
}

// TestGuardStrikes: the guard cancels a run at the second interval in a
// row over --max-host-cpu, an interval at the bound itself being under
// it. Each interval's use is what a /proc fixture says, advanced as the
// guard reads it: 100 ticks an interval, the outside share of them busy,
// the session's process idle; the first interval (two readings of the
// same fixture) is no time at all.
func TestGuardStrikes(t *testing.T) {
	for _, tc := range []struct {
		outside []int // percent of each interval after the first
		cancel  int   // the interval of outside the run is cancelled at, 0 for none
	}{
		{[]int{60, 60}, 2},
		{[]int{60, 50, 60, 60}, 4},
		{[]int{60, 40, 60, 40, 60}, 0},
		{[]int{50, 50, 50}, 0},
	} {
		dir := t.TempDir()
		self := map[int][5]int{100: {1, 0, 0, 0, 0}}
		busy, idle := 0, 0
		procFixture(t, dir, busy, 0, idle, self)
		g := NewGuard(50, dir)
		g.self, g.interval = 100, time.Millisecond
		intervals := make(chan int, 100)
		n := 0
		Observed = func(Usage) {
			// Interval n was read: the fixture of the next reading.
			if n++; n <= len(tc.outside) {
				busy, idle = busy+tc.outside[n-1], idle+100-tc.outside[n-1]
			} else {
				idle += 100
			}
			procFixture(t, dir, busy, 0, idle, self)
			intervals <- n
		}
		ctx, stop := g.Watch(context.Background())
		last := 0
	wait:
		for last <= len(tc.outside)+2 {
			select {
			case <-ctx.Done():
				break wait
			case last = <-intervals:
			}
		}
		stop()
		Observed = nil
		for len(intervals) > 0 {
			last = <-intervals
		}
		got := 0
		if errors.Is(context.Cause(ctx), ErrHostBusy) {
			got = last - 1
		}
		if got != tc.cancel || got > 0 && !strings.Contains(g.Why(), "above --max-host-cpu 50%") {
			t.Errorf("outside %v%%: cancelled at interval %d (%v, %q), want %d", tc.outside, got, context.Cause(ctx), g.Why(), tc.cancel)
		}
	}
}
