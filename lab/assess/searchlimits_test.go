package assess

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSearchTriesALevelMaxTries: a level invalid at every try but the
// last is still measured: maxTries tries, the last one valid.
func TestSearchTriesALevelMaxTries(t *testing.T) {
	v := searchOn(t, &fakeStack{degradeAt: 2, invalid: maxTries - 1}, ProbeIdle, 64)
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 2 || v.Sure != "confirmed" {
		t.Errorf("valid at try %d: levels %s, threshold %v, %s (%s); want 2 confirmed", maxTries, clients(v), v.ClientsToDegrade, v.Sure, v.Stopped)
	}
	if got := clients(v); !strings.HasPrefix(got, "1i 1i 1h 2i 2i 2d") {
		t.Errorf("levels %s, want each level invalid %d times, then valid", got, maxTries-1)
	}
}

// TestSearchStopsAtTheBudget: a level that would not fit in what is left
// of the budget is not started, and the probe says so.
func TestSearchStopsAtTheBudget(t *testing.T) {
	for _, tc := range []struct {
		left   time.Duration
		levels string
	}{
		{45 * time.Minute, ""},       // under the hour a level needs
		{100 * time.Minute, "1h 2d"}, // two levels fit, not a third
	} {
		c := Default()
		c.MaxClients = 64
		v := Verdict{Probe: string(ProbeSlowReaders), MaxClients: 64}
		f := &fakeStack{degradeAt: 2}
		// A level needs an hour of the budget and uses half of one.
		s := &search{cfg: c, v: &v, probe: ProbeSlowReaders, deadline: time.Now().Add(tc.left), hold: time.Hour - time.Duration(c.Offset),
			logf: t.Logf, recovered: func(context.Context) (bool, string) { return true, "" }}
		s.level = func(ctx context.Context, n int, keep bool) (Level, error) {
			s.deadline = s.deadline.Add(-30 * time.Minute)
			return f.level(ctx, n, keep)
		}
		s.run(context.Background())
		if got := clients(v); got != tc.levels || !strings.HasPrefix(v.Stopped, "budget: ") {
			t.Errorf("%s left: levels %q, stopped %q; want %q, then stopped by the budget", tc.left, got, v.Stopped, tc.levels)
		}
	}
}

// TestSearchRoundsBounded: a stack whose every level degrades at its first
// window and holds at every later one overturns each boundary the search
// confirms; the search stops after maxRounds of them, with what it has.
func TestSearchRoundsBounded(t *testing.T) {
	run := map[int]bool{}
	f := &fakeStack{flip: func(_, n int) (string, bool) {
		if n >= 2 && !run[n] {
			run[n] = true
			return statusDegraded, true
		}
		return "", false
	}}
	v := searchOn(t, f, ProbeIdle, 64)
	if got, want := clients(v), "1h 2d 1h 2h 2h 4d 3d 3h 3h 4h 4h 8d"; got != want {
		t.Errorf("levels %s, want %s: %d rounds", got, want, maxRounds)
	}
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 8 || v.HeldInPlace != 4 || v.Sure != "between" {
		t.Errorf("threshold %v, held in place %d, %s; want 8, 4, between", v.ClientsToDegrade, v.HeldInPlace, v.Sure)
	}
}

// TestSearchClimbsOnAboveAConfirmedLevel: a level whose first window
// degraded but whose confirmation held is not the threshold; the search
// climbs on from it, without running it again.
func TestSearchClimbsOnAboveAConfirmedLevel(t *testing.T) {
	f := &fakeStack{degradeAt: 8, flip: func(w, n int) (string, bool) {
		if n == 4 && w == 3 {
			return statusDegraded, true
		}
		return "", false
	}}
	v := searchOn(t, f, ProbeIdle, 64)
	if got, want := clients(v), "1h 2h 4d 3h 3h 4h 4h 8d 6h 7h 7h 8d"; got != want {
		t.Errorf("levels %s, want %s", got, want)
	}
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 8 || v.HeldInPlace != 7 || v.Sure != "confirmed" {
		t.Errorf("threshold %v, held in place %d, %s; want 8, 7, confirmed", v.ClientsToDegrade, v.HeldInPlace, v.Sure)
	}
}
