package recorder

import (
	"slices"
	"time"
)

// SSERun is one row of sse-runs.csv: one run of the sse experiment.
// Streams SSE streams of IntervalS for DurationS ran beside the open-loop
// /fast schedule. EventsExpected and Events count the tick events the
// streams should carry and those the client received; StreamsComplete the
// streams that ended with their end event. The delay columns are over
// every event of the run (nearest rank; max the largest), FirstByteMS the
// median over its streams. Slots is the app's capacity (workers x
// threads; empty for an event loop), Workers its worker processes;
// HeldMax is the most streams the app held at once, and WorkersHoldingMax
// the most workers holding at least one stream at once, both from the
// app's own count sampled during the run (empty when none was read). The
// /fast columns are runs.csv's (SummarizeRun).
type SSERun struct {
	RunID, Route, Server    string
	Streams, Rep            int
	IntervalS, DurationS    float64
	StartedAt               time.Time
	Status, Reason          string
	EventsExpected, Events  int
	StreamsComplete         int
	DelayP50MS, DelayP95MS  Maybe
	DelayMaxMS, FirstByteMS Maybe
	Slots, Workers          Maybe
	HeldMax                 Maybe
	WorkersHoldingMax       Maybe
	FastPlanned, FastSent   int
	FastTotal, FastOK       int
	P50MS, P95MS, MaxMS     Maybe
}

func (SSERun) Schema() *Schema[SSERun] { return &sseRunSchema }

var sseRunSchema = Schema[SSERun]{file: "sse-runs.csv", cols: slices.Concat(
	[]Column[SSERun]{
		Col("run_id", 0, func(r *SSERun) any { return &r.RunID }),
		Col("route", 0, func(r *SSERun) any { return &r.Route }),
		Col("server", 0, func(r *SSERun) any { return &r.Server }),
		Col("streams", 0, func(r *SSERun) any { return &r.Streams }),
		Col("rep", 0, func(r *SSERun) any { return &r.Rep }),
		Col("interval_s", msOfS, func(r *SSERun) any { return &r.IntervalS }),
		Col("duration_s", msOfS, func(r *SSERun) any { return &r.DurationS }),
	},
	StatusCols(func(r *SSERun) RunStatus { return RunStatus{&r.StartedAt, &r.Status, &r.Reason} }),
	[]Column[SSERun]{
		Col("events_expected", 0, func(r *SSERun) any { return &r.EventsExpected }),
		Col("events", 0, func(r *SSERun) any { return &r.Events }),
		Col("streams_complete", 0, func(r *SSERun) any { return &r.StreamsComplete }),
		Col("delay_p50_ms", usOfMS, func(r *SSERun) any { return &r.DelayP50MS }),
		Col("delay_p95_ms", usOfMS, func(r *SSERun) any { return &r.DelayP95MS }),
		Col("delay_max_ms", usOfMS, func(r *SSERun) any { return &r.DelayMaxMS }),
		Col("first_byte_ms", usOfMS, func(r *SSERun) any { return &r.FirstByteMS }),
		Col("slots", whole, func(r *SSERun) any { return &r.Slots }),
		Col("workers", whole, func(r *SSERun) any { return &r.Workers }),
		Col("held_max", whole, func(r *SSERun) any { return &r.HeldMax }),
		Col("workers_holding_max", whole, func(r *SSERun) any { return &r.WorkersHoldingMax }),
	},
	FastCols(func(r *SSERun) FastRun {
		return FastRun{&r.FastPlanned, &r.FastSent, &r.FastTotal, &r.FastOK, &r.P50MS, &r.P95MS, &r.MaxMS}
	}),
)}

// SummarizeSSERun fills run's /fast columns from reqs (as SummarizeRun
// does) and its event columns from the run's streams and events.
func SummarizeSSERun(run SSERun, reqs []Request, streams []SSEStream, events []SSEEvent) SSERun {
	fast := SummarizeRun(RunMeta{FastPlanned: run.FastPlanned}, reqs, nil)
	run.FastSent, run.FastTotal, run.FastOK = fast.FastSent, fast.FastTotal, fast.FastOK
	run.P50MS, run.P95MS, run.MaxMS = fast.P50MS, fast.P95MS, fast.MaxMS
	run.EventsExpected, run.Events, run.StreamsComplete = 0, len(events), 0
	var first []float64
	for _, s := range streams {
		run.EventsExpected += s.EventsExpected
		if s.Outcome == SSEComplete {
			run.StreamsComplete++
		}
		first = AppendValid(first, s.FirstByteMS)
	}
	delays := make([]float64, len(events))
	for i, e := range events {
		delays[i] = e.DelayMS
	}
	run.DelayP50MS, run.DelayP95MS, run.DelayMaxMS = SSEDelays(delays)
	run.FirstByteMS = Some(Median(first))
	return run
}

// SSEDelays returns the nearest-rank p50 and p95 and the largest of
// delays, each invalid when there are none.
func SSEDelays(delays []float64) (p50, p95, most Maybe) {
	return Some(NearestRank(delays, 50)), Some(NearestRank(delays, 95)), Some(NearestRank(delays, 100))
}

// SSECondition is one condition of sse over its ok runs: the printed
// table's row and the report's. Delays and /fast percentiles are medians
// of the runs' values (DelayMaxMS the largest); events and streams are
// summed; HeldMax and WorkersHoldingMax are the largest.
type SSECondition struct {
	Route, Server           string
	Streams                 int
	IntervalS, DurationS    float64
	Runs, Excluded          int
	EventsExpected, Events  int
	StreamsComplete         int
	DelayP50MS, DelayP95MS  Maybe
	DelayMaxMS, FirstByteMS Maybe
	Slots, Workers          Maybe
	HeldMax                 Maybe
	WorkersHoldingMax       Maybe
	FastPlanned, FastOK     int
	P50MS, P95MS            Maybe
}

// SummarizeSSEConditions folds runs into one SSECondition per condition
// (route, server, streams, interval, duration), in order of first
// appearance; runs that did not end ok count only in Excluded.
func SummarizeSSEConditions(runs []SSERun) []SSECondition {
	type key struct {
		route, server string
		streams       int
		interval, dur float64
	}
	var keys []key
	groups := map[key][]SSERun{}
	for _, r := range runs {
		k := key{r.Route, r.Server, r.Streams, r.IntervalS, r.DurationS}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows []SSECondition
	for _, k := range keys {
		row := SSECondition{Route: k.route, Server: k.server, Streams: k.streams, IntervalS: k.interval, DurationS: k.dur}
		var p50, p95, most, first, held, holding, fp50, fp95 []float64
		for _, r := range groups[k] {
			if r.Status != RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			row.EventsExpected += r.EventsExpected
			row.Events += r.Events
			row.StreamsComplete += r.StreamsComplete
			row.FastPlanned += r.FastPlanned
			row.FastOK += r.FastOK
			row.Slots, row.Workers = r.Slots, r.Workers
			p50, p95, most = AppendValid(p50, r.DelayP50MS), AppendValid(p95, r.DelayP95MS), AppendValid(most, r.DelayMaxMS)
			first = AppendValid(first, r.FirstByteMS)
			held, holding = AppendValid(held, r.HeldMax), AppendValid(holding, r.WorkersHoldingMax)
			fp50, fp95 = AppendValid(fp50, r.P50MS), AppendValid(fp95, r.P95MS)
		}
		row.DelayP50MS, row.DelayP95MS, row.DelayMaxMS = Some(Median(p50)), Some(Median(p95)), Some(NearestRank(most, 100))
		row.FirstByteMS = Some(Median(first))
		row.HeldMax, row.WorkersHoldingMax = Some(NearestRank(held, 100)), Some(NearestRank(holding, 100))
		row.P50MS, row.P95MS = Some(Median(fp50)), Some(Median(fp95))
		rows = append(rows, row)
	}
	return rows
}
