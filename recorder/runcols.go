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
