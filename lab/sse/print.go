package sse

import (
	"fmt"
	"io"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: sse-runs.csv's rows (its ReasonsFile) and
// the conditions the stack could not run.
type Result struct {
	lab.MatrixResult[recorder.SSERun]
}

// Print implements lab.Result.
func (r *Result) Print(w io.Writer) {
	PrintTable(w, r.Runs)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
}

// PrintTable writes the conditions table as aligned text, then what its
// columns mean.
func PrintTable(w io.Writer, runs []recorder.SSERun) {
	fmt.Fprintf(w, "%-36s %-12s %7s %4s %8s %13s %9s %12s %12s %12s %13s %4s %15s %9s %11s %11s\n", "route", "server", "streams", "runs", "excluded",
		"events", "complete", "delay_p50_ms", "delay_p95_ms", "delay_max_ms", "first_byte_ms", "held", "workers_holding", "fast_ok", "fast_p50_ms", "fast_p95_ms")
	for _, r := range recorder.SummarizeSSEConditions(runs) {
		holding := lab.Num(r.WorkersHoldingMax, 0) + "/" + lab.Num(r.Workers, 0)
		fmt.Fprintf(w, "%-36s %-12s %7d %4d %8d %13s %9d %12s %12s %12s %13s %4s %15s %9s %11s %11s\n", r.Route, r.Server, r.Streams, r.Runs, r.Excluded,
			fmt.Sprintf("%d/%d", r.Events, r.EventsExpected), r.StreamsComplete, lab.Num(r.DelayP50MS, 1), lab.Num(r.DelayP95MS, 1), lab.Num(r.DelayMaxMS, 1),
			lab.Num(r.FirstByteMS, 1), lab.Num(r.HeldMax, 0), holding, fmt.Sprintf("%d/%d", r.FastOK, r.FastPlanned), lab.Num(r.P50MS, 1), lab.Num(r.P95MS, 1))
	}
	fmt.Fprintln(w, strings.Join([]string{
		"events: tick events received / expected over the ok runs; complete: streams that ended with their end event; delay: an event's",
		"client receive time minus the server's stamp in it (p50, p95: medians of the runs' nearest-rank values; max: the largest);",
		"first_byte_ms: request to the response's first byte, median; held: most streams the app held at once; workers_holding: most",
		"workers holding a stream at once / the server's workers; fast: /fast ok of planned, latency p50 and p95 (medians over the runs)"}, "\n"))
}
