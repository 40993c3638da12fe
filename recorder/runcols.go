package recorder

import "time"

// The columns run rows share, declared once: each row file points at its
// own fields (the column names, order and precision are the same in
// every file that has them).

// runStatus points at a run row's start time, status and reason.
type runStatus struct {
	startedAt      *time.Time
	status, reason *string
}

// statusCols are a run row's started_at, status and reason columns.
func statusCols[T any](of func(*T) runStatus) []Column[T] {
	return []Column[T]{
		Col("started_at", 0, func(r *T) any { return of(r).startedAt }),
		Col("status", 0, func(r *T) any { return of(r).status }),
		Col("reason", 0, func(r *T) any { return of(r).reason }),
	}
}

// fastRun points at a run row's /fast counts and latencies.
type fastRun struct {
	planned, sent, total, ok *int
	p50, p95, max            *Maybe
}

// fastCols are a run row's fast_planned, fast_sent, fast_total, fast_ok,
// p50_ms, p95_ms and max_ms columns.
func fastCols[T any](of func(*T) fastRun) []Column[T] {
	return []Column[T]{
		Col("fast_planned", 0, func(r *T) any { return of(r).planned }),
		Col("fast_sent", 0, func(r *T) any { return of(r).sent }),
		Col("fast_total", 0, func(r *T) any { return of(r).total }),
		Col("fast_ok", 0, func(r *T) any { return of(r).ok }),
		Col("p50_ms", usOfMS, func(r *T) any { return of(r).p50 }),
		Col("p95_ms", usOfMS, func(r *T) any { return of(r).p95 }),
		Col("max_ms", usOfMS, func(r *T) any { return of(r).max }),
	}
}
