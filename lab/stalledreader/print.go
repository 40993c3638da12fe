package stalledreader

import (
	"fmt"
	"io"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: stalled-runs.csv's rows (its ReasonsFile)
// and the conditions the stack could not run.
type Result struct {
	lab.MatrixResult[recorder.StalledRun]
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
func PrintTable(w io.Writer, runs []recorder.StalledRun) {
	fmt.Fprintf(w, "%-19s %-12s %-5s %7s %8s %7s %4s %4s %9s %8s %-34s %-32s %10s %6s %10s\n", "route", "server", "mode", "clients",
		"app_to", "send_to", "runs", "excl", "fast_ok", "p95_ms", "outcomes(ok/trunc/reset/timeout/other)", "ended_by(app/send/client/unknown)",
		"bytes_mib", "killed", "app_held_s")
	for _, r := range recorder.SummarizeStalledConditions(runs) {
		fmt.Fprintf(w, "%-19s %-12s %-5s %7d %8s %7s %4d %4d %9s %8s %-38s %-33s %10s %6s %10s\n", r.Route, r.Server, r.Mode, r.Clients,
			secs(r.AppTimeoutS), secs(r.SendTimeoutS), r.Runs, r.Excluded, fmt.Sprintf("%d/%d", r.FastOK, r.FastTotal), lab.Num(r.P95MS, 1),
			fmt.Sprintf("%d/%d/%d/%d/%d", r.Complete, r.Truncated, r.Reset, r.Timeout, r.Other),
			fmt.Sprintf("%d/%d/%d/%d", r.ByAppTimeout, r.BySendTimeout, r.ByClient, r.ByUnknown),
			mib(r.BytesMedian), lab.Num(r.WorkerTimeouts, 0), lab.Num(r.AppHeldS, 2))
	}
	fmt.Fprintln(w, strings.Join([]string{
		"app_to: the app's timeout (Gunicorn --timeout), send_to: the proxy's send_timeout (- where unset or no proxy); fast_ok and p95_ms:",
		"/fast requests ok of sent and their p95 (nearest rank, median over the ok runs); outcomes: every download of the ok runs by how it",
		"ended (trunc: EOF before Content-Length); ended_by: the component its logs say ended it; bytes_mib: median bytes received;",
		"killed: WORKER TIMEOUT lines in the runs' logs; app_held_s: the longest the app held a worker on a download (median over runs)"}, "\n"))
}

func secs(m recorder.Maybe) string {
	if !m.Valid {
		return "-"
	}
	return fmt.Sprintf("%.0fs", m.Value)
}

func mib(m recorder.Maybe) string {
	if !m.Valid {
		return "-"
	}
	return fmt.Sprintf("%.2f", m.Value/(1<<20))
}
