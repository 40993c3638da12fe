package exporter

import (
	"sort"
	"sync"

	"github.com/slowlab/slowlab/cgroup"
)

// This file keeps the cgroup collector's counters monotonic for the life of
// the exporter, however the cgroups behind a series change. A series (one
// label set: a fixed group, a dynamic group, or "other", which sums the
// dynamic matches over --max-dynamic-groups) publishes, for each counter,
// the sum of its live members' current values plus one retired total: the
// last-seen values of the members that left it, frozen when they left (as
// node_exporter- and cAdvisor-style aggregators do). So a cgroup that is
// removed no longer takes its count out of the sum, which Prometheus read
// as a counter reset and counted the remaining value again in increase()
// and rate(): a false SlowlabOOMKill, a CPU spike.
//
// A member that joins a series adds its whole value: a cgroup created after
// the exporter started counted all of it since; a cgroup present when the
// series is first published is part of its starting value. A member whose
// own counter goes backwards (a cgroup removed and made again under the same
// path between two scrapes; kernel counters are otherwise monotonic) is a
// reset of that member: its old value is retired and its new one added. A
// counter a live member could not read this scrape keeps its last value.
//
// State is bounded: per live member one set of last values, per series one
// retired total, nothing per retired member. A series absent from a scrape
// keeps its state (its label set may come back: a unit restarted, a slot
// freed), up to --max-dynamic-groups absent series, the longest absent
// dropped first. The state lives as long as the process: the command passes
// the same Counters to the Exporter each reload builds (Options.Counters),
// so a reload does not make a counter go back either.

// counterFields are the cgroup.Stats fields that are counters.
const counterFields = 5

func counterPtrs(s *cgroup.Stats) [counterFields]**float64 {
	return [counterFields]**float64{&s.CPUSeconds, &s.Periods, &s.ThrottledPeriods, &s.ThrottledSeconds, &s.OOMKills}
}

// counterSet is one value per counter field; has says which are known.
type counterSet struct {
	v   [counterFields]float64
	has [counterFields]bool
}

// member is a live member's last values and the Update that last read it.
type member struct {
	counterSet
	seen uint64
}

// counterSeries is one published label set's state.
type counterSeries struct {
	retired counterSet
	members map[string]*member // by cgroup path
	seen    uint64             // the Update that last published it
}

// memberRead is what one scrape read of a series' member.
type memberRead struct {
	path string
	s    cgroup.Stats
}

// NewCounters makes the state of Options.Counters.
func NewCounters() *Counters { return newCounterState(DefaultMaxDynamicGroups) }

// Counters is the state that keeps the cgroup collector's counters
// monotonic across scrapes and reloads: make one with NewCounters and give
// it to each Exporter of the process (Options.Counters).
type Counters struct {
	mu        sync.Mutex // held for a whole Update: reads and state in order
	series    map[string]*counterSeries
	scrape    uint64
	maxAbsent int
	reads     []memberRead // the cgroup collector's buffer, reused
}

func newCounterState(maxAbsent int) *Counters {
	return &Counters{series: map[string]*counterSeries{}, maxAbsent: maxAbsent}
}

// publish folds this scrape's reads of series key into its state and
// returns what to publish: reads' gauges summed as before, counters
// replaced by retired + live.
func (c *Counters) publish(key string, reads []memberRead, sum cgroup.Stats) cgroup.Stats {
	sr := c.series[key]
	if sr == nil {
		sr = &counterSeries{members: map[string]*member{}}
		c.series[key] = sr
	}
	sr.seen = c.scrape
	for _, r := range reads {
		m := sr.members[r.path]
		if m == nil {
			m = &member{}
			sr.members[r.path] = m
		}
		m.seen = c.scrape
		for i, p := range counterPtrs(&r.s) {
			if *p == nil {
				continue // unreadable this scrape: keeps its last value
			}
			v := **p
			if m.has[i] && v < m.v[i] {
				sr.retired.v[i] += m.v[i] // the member was reset: its old count stays
				sr.retired.has[i] = true
			}
			m.v[i], m.has[i] = v, true
		}
	}
	for path, m := range sr.members {
		if m.seen == c.scrape {
			continue
		}
		for i := range m.v {
			if m.has[i] {
				sr.retired.v[i] += m.v[i]
				sr.retired.has[i] = true
			}
		}
		delete(sr.members, path)
	}
	total := sr.retired
	for _, m := range sr.members {
		for i := range m.v {
			if m.has[i] {
				total.v[i] += m.v[i]
				total.has[i] = true
			}
		}
	}
	out := sum
	for i, p := range counterPtrs(&out) {
		*p = nil
		if total.has[i] {
			v := total.v[i]
			*p = &v
		}
	}
	return out
}

// begin starts an Update; end drops the longest-absent series over the
// bound.
func (c *Counters) begin() { c.scrape++ }

func (c *Counters) end() {
	var absent []string
	for key, sr := range c.series {
		if sr.seen != c.scrape {
			absent = append(absent, key)
		}
	}
	if len(absent) <= c.maxAbsent {
		return
	}
	sort.Slice(absent, func(i, j int) bool { return c.series[absent[i]].seen < c.series[absent[j]].seen })
	for _, key := range absent[:len(absent)-c.maxAbsent] {
		delete(c.series, key)
	}
}
