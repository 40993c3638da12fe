package assess

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/report"
)

// The threshold search: clients 1, 2, 4, ... up to MaxClients until /fast
// degrades; then bisection between the last level that held and the first
// that degraded, so the threshold is an exact count; then the boundary
// confirmed by a second window on each side (held at N-1, degraded at N).
// Every window is a level run in Verdict.Levels, in the order run; an
// invalid one is run again (maxTries in all), a short one (fewer clients
// in place than asked) ends the search. finish reads the verdict from the
// levels, so what the search did and what it concludes cannot disagree.

// search is one probe's threshold search.
type search struct {
	cfg      *Config
	v        *Verdict
	probe    Probe
	deadline time.Time
	// hold is how long a level takes at the most (its clients' bound).
	hold time.Duration
	// level runs one window of n clients; recovered waits until /fast
	// answers under the threshold again: whether it did and, if not, why
	// the wait said nothing of the stack ("" when it did) (the real ones
	// are run's; a test gives its own stack's).
	level     func(ctx context.Context, n int, keep bool) (Level, error)
	recovered func(ctx context.Context) (bool, string)
	// died says which of the stack's processes died (nil: none, or not
	// known); a level it died in measured the death, not the clients.
	died func() error
	logf func(format string, args ...any)
}

// levels runs the search and sets v's threshold, Sure, Windows,
// HeldInPlace and Stopped.
func (c *Config) levels(ctx context.Context, env *lab.Env, r *run, v *Verdict, base time.Duration, deadline time.Time) {
	s := &search{cfg: c, v: v, probe: r.probe, deadline: deadline, hold: r.hold(), logf: env.Logf,
		level: func(ctx context.Context, n int, keep bool) (Level, error) {
			return r.levelIn(ctx, n, base, n == c.MaxClients, slot{share: n, measure: true, keep: keep})
		},
		recovered: func(ctx context.Context) (bool, string) { return r.recovered(ctx, base, recoverBound) }, died: r.died}
	s.run(ctx)
	finish(v)
	if lv := v.LastLevel(); v.Stopped == "degraded" && lv != nil {
		v.Stopped += ": " + lv.Degraded
	}
}

func (s *search) run(ctx context.Context) {
	lo, hi, stop := s.climb(ctx, 0)
	if stop {
		return
	}
	for round := 0; hi > 0 && round < maxRounds; round++ {
		if hi, lo, stop = s.bisect(ctx, lo, hi); stop {
			return
		}
		// The boundary, each side confirmed by a majority of its windows;
		// the threshold's last, so its clients are the ones kept and what
		// held them is read there. A side the majority overturns moves the
		// boundary: the search goes on from the levels it knows.
		if lo > 0 {
			st, stop := s.confirm(ctx, lo)
			if stop {
				return
			}
			if st == statusDegraded {
				lo, hi = s.below(lo), lo
				continue
			}
		}
		st, stop := s.confirm(ctx, hi)
		if stop {
			return
		}
		if st == statusDegraded {
			s.v.Stopped = "degraded"
			return
		}
		if lo, hi = hi, s.above(hi); hi == 0 {
			if lo, hi, stop = s.climb(ctx, lo); stop {
				return
			}
		}
	}
	if hi == 0 {
		s.v.Stopped = fmt.Sprintf("not degraded with %d", s.cfg.MaxClients)
		return
	}
	s.v.Stopped = "degraded"
}

// maxRounds bounds how often a boundary overturned by its confirmation
// is searched again.
const maxRounds = 3

// climb tries 1, 2, 4, ... (the powers of two above from, and MaxClients)
// until one degrades: the last that held and the one that degraded (0
// when none did).
func (s *search) climb(ctx context.Context, from int) (lo, hi int, stop bool) {
	lo = from
	for _, n := range levelsUpTo(s.cfg.MaxClients) {
		if n <= from {
			continue
		}
		st, stop := s.try(ctx, n, n == s.cfg.MaxClients)
		switch {
		case stop:
			return lo, 0, true
		case st == statusDegraded:
			return lo, n, false
		}
		lo = n
	}
	return lo, 0, false
}

// bisect halves the gap between lo (held) and hi (degraded), a window a
// level, until they are one client apart.
func (s *search) bisect(ctx context.Context, lo, hi int) (newHi, newLo int, stop bool) {
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		st, stop := s.try(ctx, mid, false)
		if stop {
			return hi, lo, true
		}
		if st == statusDegraded {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, lo, false
}

// confirm runs windows of n clients until its valid windows have a
// majority of two (a second window, and a third where the two disagree),
// and returns it. The second window at a level keeps its clients, where
// the probe keeps them: the threshold's.
func (s *search) confirm(ctx context.Context, n int) (status string, stop bool) {
	for {
		held, degraded := s.count(n)
		switch {
		case degraded >= 2 && degraded > held:
			return statusDegraded, false
		case held >= 2 && held > degraded:
			return statusHeld, false
		}
		if _, stop := s.try(ctx, n, held+degraded == 1); stop {
			return "", true
		}
	}
}

// count is how many valid windows of n clients held and degraded.
func (s *search) count(n int) (held, degraded int) {
	h, d := tally(s.v.Levels)
	return h[n], d[n]
}

// tally is how many valid windows held and degraded, by clients.
func tally(levels []Level) (held, degraded map[int]int) {
	held, degraded = map[int]int{}, map[int]int{}
	for _, lv := range levels {
		switch lv.Status {
		case statusDegraded:
			degraded[lv.Clients]++
		case statusHeld:
			held[lv.Clients]++
		}
	}
	return held, degraded
}

// below is the largest level under n whose windows held by majority (0
// for none: the baseline); above the smallest over n that degraded by
// majority (0 for none).
func (s *search) below(n int) int {
	best := 0
	for _, lv := range s.v.Levels {
		if h, d := s.count(lv.Clients); lv.Clients < n && h > d && lv.Clients > best {
			best = lv.Clients
		}
	}
	return best
}

func (s *search) above(n int) int {
	best := 0
	for _, lv := range s.v.Levels {
		if h, d := s.count(lv.Clients); lv.Clients > n && d >= h && d > 0 && (best == 0 || lv.Clients < best) {
			best = lv.Clients
		}
	}
	return best
}

// try runs a level of n clients until it is valid (maxTries at most): its
// status, and whether the search stops (v.Stopped says why: the budget,
// /fast not back, interrupted, results not written, a level short of
// clients or invalid at every try). A wait for /fast to come back that
// failed while the instrument was short of CPU is an invalid try too: it
// says nothing of the stack, and the wait is tried again.
func (s *search) try(ctx context.Context, n int, keep bool) (status string, stop bool) {
	last := ""
	for k := 1; k <= maxTries; k++ {
		need := s.hold + time.Duration(s.cfg.Offset)
		if s.probe.keeps() && keep {
			need = max(need, time.Duration(s.cfg.IdleMax))
		}
		if left := time.Until(s.deadline); left < need {
			s.v.Stopped = fmt.Sprintf("budget: %s left, a level of %d takes up to %s", left.Round(time.Second), n, need.Round(time.Second))
			return "", true
		}
		if len(s.v.Levels) > 0 {
			back, why := s.recovered(ctx)
			switch {
			case back:
			case why != "" && ctx.Err() == nil:
				last = "waiting for /fast to come back: " + why
				s.logf("assess: %s: before %s, try %d: invalid, %s", s.probe, report.Count(n, "client"), k, last)
				continue
			case s.stackDied():
				return "", true
			default:
				s.v.Stopped = fmt.Sprintf("not recovered: /fast did not come back within %s after %s",
					recoverBound, report.Count(s.v.Levels[len(s.v.Levels)-1].Clients, "client"))
				return "", true
			}
		}
		s.logf("assess: %s: %s, try %d (%s left)", s.probe, report.Count(n, "client"), k, time.Until(s.deadline).Round(time.Second))
		lv, err := s.level(ctx, n, keep)
		s.v.Levels = append(s.v.Levels, lv)
		s.v.Tried = max(s.v.Tried, n)
		switch {
		case err != nil:
			s.v.Stopped = "failed: results not all written: " + err.Error()
			return "", true
		case ctx.Err() != nil:
			s.v.Stopped = interrupted(ctx)
			return "", true
		case s.stackDied():
			return "", true
		case lv.Status == statusShort:
			s.v.Stopped = fmt.Sprintf("short: %d of %s in place at the level of %d: the stack did not take them", lv.Connected, report.Count(n, "client"), n)
			return lv.Status, true
		case lv.Status != statusInvalid:
			return lv.Status, false
		}
		last = lv.Invalid
		s.logf("assess: %s: %s: invalid, %s", s.probe, report.Count(n, "client"), lv.Invalid)
	}
	s.v.Stopped = fmt.Sprintf("invalid: the level of %s was invalid %s (last: %s)", report.Count(n, "client"), report.Count(maxTries, "time"), last)
	return statusInvalid, true
}

// finish reads v's verdict from its levels, each level judged by the
// majority of its valid windows (a tie counts as degraded): the threshold
// is the fewest clients that degraded; HeldInPlace the most that held,
// every client in place, below it; Sure how the two sides stand.
func finish(v *Verdict) {
	held, degraded := tally(v.Levels)
	levels := slices.Concat(slices.Collect(maps.Keys(held)), slices.Collect(maps.Keys(degraded)))
	slices.Sort(levels)
	levels = slices.Compact(levels)
	minDeg, dissent, heldAbove := 0, false, false
	v.HeldInPlace, v.ClientsToDegrade, v.AtP95MS, v.AtFailed = 0, nil, nil, 0
	for _, n := range levels {
		switch {
		case minDeg > 0:
			heldAbove = heldAbove || held[n] > degraded[n]
		case degraded[n] >= held[n]:
			minDeg = n
		default:
			v.HeldInPlace = n
		}
	}
	if minDeg == 0 {
		v.Sure, v.Windows = "held", held[v.HeldInPlace]
		if v.HeldInPlace == 0 {
			v.Sure = "none"
		}
		return
	}
	v.ClientsToDegrade = &minDeg
	if lv := v.LastLevel(); lv != nil {
		if lv.FastOK > 0 {
			at := lv.P95MS
			v.AtP95MS = &at
		}
		v.AtFailed = lv.FastFail
	}
	agreeBelow, dissentBelow := held[minDeg-1], degraded[minDeg-1]
	if minDeg == 1 {
		agreeBelow = 2 // the baseline: no clients, which the refusal rule held
	}
	dissent = held[minDeg] > 0 || dissentBelow > 0
	v.Windows = degraded[minDeg] + held[minDeg] + held[minDeg-1] + degraded[minDeg-1]
	switch {
	case heldAbove:
		v.Sure = "unstable"
	case v.HeldInPlace < minDeg-1:
		v.Sure = "between"
	case degraded[minDeg] >= 2 && agreeBelow >= 2 && !dissent:
		v.Sure = "confirmed"
	case degraded[minDeg] >= 2 && agreeBelow >= 2:
		v.Sure = "majority"
	default:
		v.Sure = "once"
	}
}

// stackDiedPrefix starts Stopped of a probe whose stack died.
const stackDiedPrefix = "failed: the stack died"

// stackDied reports whether one of the stack's processes has died (a
// proxy killed at its cgroup's memory limit holding the clients'
// responses), and then stops the search there, saying so: no later level
// could measure clients against a stack that is gone.
func (s *search) stackDied() bool {
	if s.died == nil {
		return false
	}
	err := s.died()
	if err == nil {
		return false
	}
	s.v.Stopped = fmt.Sprintf("%s at the level of %s: %v", stackDiedPrefix, report.Count(s.v.Levels[len(s.v.Levels)-1].Clients, "client"), err)
	return true
}
