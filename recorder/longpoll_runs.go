package recorder

import "time"

// LongPollRun is one row of longpoll-runs.csv: one run of the long-poll
// experiment and how it ended. Status is ok when the run measured its
// whole window (its figures are then groups.csv's row of the same run_id),
// failed when the stack, the instruments or the load generator failed, or
// results were not all written, aborted when it was interrupted or the
// host was too busy (--max-host-cpu); Reason says why. Probes counts the
// rows the run wrote to probes.csv, whatever its status. A resumed session
// keeps the runs that are ok here and drops every other run's rows from
// each file.
type LongPollRun struct {
	RunID            string
	Server           string
	Hold             int
	ProbeConcurrency int
	Rep              int
	StartedAt        time.Time
	Status, Reason   string
	Probes           int
}

func (LongPollRun) Schema() *Schema[LongPollRun] { return &longPollRunSchema }

var longPollRunSchema = Schema[LongPollRun]{file: "longpoll-runs.csv", cols: []Column[LongPollRun]{
	Col("run_id", 0, func(r *LongPollRun) any { return &r.RunID }),
	Col("server", 0, func(r *LongPollRun) any { return &r.Server }),
	Col("hold", 0, func(r *LongPollRun) any { return &r.Hold }),
	Col("probe_concurrency", 0, func(r *LongPollRun) any { return &r.ProbeConcurrency }),
	Col("rep", 0, func(r *LongPollRun) any { return &r.Rep }),
	Col("started_at", 0, func(r *LongPollRun) any { return &r.StartedAt }),
	Col("status", 0, func(r *LongPollRun) any { return &r.Status }),
	Col("reason", 0, func(r *LongPollRun) any { return &r.Reason }),
	Col("probes", 0, func(r *LongPollRun) any { return &r.Probes }),
}}
