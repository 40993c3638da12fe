package recorder

import "time"

// The columns run rows share, declared once: each row file points at its
// own fields (the column names, order and precision are the same in
// every file that has them).

// RunStatus points at a run row's start time, status and reason.
type RunStatus struct {
	StartedAt      *time.Time
	Status, Reason *string
}

// StatusCols are a run row's started_at, status and reason columns.
func StatusCols[T any](of func(*T) RunStatus) []Column[T] {
	return []Column[T]{
		Col("started_at", 0, func(r *T) any { return of(r).StartedAt }),
		Col("status", 0, func(r *T) any { return of(r).Status }),
		Col("reason", 0, func(r *T) any { return of(r).Reason }),
	}
}

// FastRun points at a run row's /fast counts and latencies.
type FastRun struct {
	Planned, Sent, Total, OK *int
	P50, P95, Max            *Maybe
}

// FastCols are a run row's fast_planned, fast_sent, fast_total, fast_ok,
// p50_ms, p95_ms and max_ms columns.
func FastCols[T any](of func(*T) FastRun) []Column[T] {
	return []Column[T]{
		Col("fast_planned", 0, func(r *T) any { return of(r).Planned }),
		Col("fast_sent", 0, func(r *T) any { return of(r).Sent }),
		Col("fast_total", 0, func(r *T) any { return of(r).Total }),
		Col("fast_ok", 0, func(r *T) any { return of(r).OK }),
		Col("p50_ms", usOfMS, func(r *T) any { return of(r).P50 }),
		Col("p95_ms", usOfMS, func(r *T) any { return of(r).P95 }),
		Col("max_ms", usOfMS, func(r *T) any { return of(r).Max }),
	}
}

// FastOver is /fast over a condition's ok runs, as every conditions
// table shows it: the requests planned and ok summed, p50 and p95 the
// medians of the runs' values, and the range of their p95.
type FastOver struct {
	FastPlanned, FastOK              int
	P50MS, P95MS, P95MinMS, P95MaxMS Maybe
}

// SummarizeFast is FastOver of runs (the caller passes the ok ones), whose
// /fast columns of points at.
func SummarizeFast[T any](runs []T, of func(*T) FastRun) FastOver {
	var f FastOver
	var p50, p95 []float64
	for i := range runs {
		r := of(&runs[i])
		f.FastPlanned += *r.Planned
		f.FastOK += *r.OK
		p50, p95 = AppendValid(p50, *r.P50), AppendValid(p95, *r.P95)
	}
	f.P50MS, f.P95MS = Some(Median(p50)), Some(Median(p95))
	f.P95MinMS, f.P95MaxMS = Some(minimum(p95)), Some(NearestRank(p95, 100))
	return f
}
