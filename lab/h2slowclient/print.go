package h2slowclient

import (
	"fmt"
	"io"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: h2-runs.csv's rows.
type Result struct {
	lab.MatrixResult[recorder.H2Run]
}

// Print implements lab.Result: one row per condition over its ok runs.
func (r *Result) Print(w io.Writer) { PrintConditions(w, recorder.SummarizeH2Conditions(r.Runs)) }

// PrintConditions writes the conditions as an aligned table.
func PrintConditions(w io.Writer, conds []recorder.H2Condition) {
	fmt.Fprintf(w, "%-26s %-12s %7s %5s %-9s %-6s %11s %4s %8s %8s %4s %5s %13s %6s %7s %8s %12s %14s %13s %9s %11s %11s\n", "route", "server", "streams", "conns",
		"fast_conn", "read", "conn_window", "runs", "excluded", "complete", "cut", "reset", "reset_after_s", "failed", "workers", "app_held", "app_complete", "proxy_mem_mib", "temp_peak_mib",
		"fast_ok", "fast_p50_ms", "fast_p95_ms")
	for _, c := range conds {
		fmt.Fprintf(w, "%-26s %-12s %7d %5d %-9s %-6s %11d %4d %8d %8d %4d %5d %13s %6d %7s %8s %12d %14s %13s %9s %11s %11s\n", c.Route, c.Server, c.Streams, c.Conns,
			c.FastConn, c.Read, c.ConnWindow, c.Runs, c.Excluded, c.Complete, c.Cut, c.Reset, lab.Num(c.ResetAfterS, 2), c.Failed, lab.Num(c.Workers, 0), lab.Num(c.AppHeldMax, 0), c.AppComplete,
			lab.Num(c.ProxyMemPeakMiB, 1), lab.Num(c.TempPeakMiB, 1), fmt.Sprintf("%d/%d", c.FastOK, c.FastPlanned), lab.Num(c.P50MS, 1), lab.Num(c.P95MS, 1))
	}
	fmt.Fprintln(w, "streams: slow HTTP/2 streams reading /large, on one connection or a connection each (conns); fast_conn: /fast on its own")
	fmt.Fprintln(w, "connection (separate) or on the slow streams' first (shared); read: paced at slow.rate, or stalled with the window closed;")
	fmt.Fprintln(w, "conn_window: the client connections' flow-control window, shared by their streams;")
	fmt.Fprintln(w, "complete/cut/reset/failed: streams read whole, still open at the end of the hold (the client reset them), reset by the")
	fmt.Fprintln(w, "proxy (its send_timeout; reset_after_s: when, from the request), or ended otherwise;")
	fmt.Fprintln(w, "workers: the app's worker slots; app_held: the most slow responses the app was writing at once (its send log, every 200 ms);")
	fmt.Fprintln(w, "app_complete: slow responses the app handed over whole; proxy_mem_mib, temp_peak_mib: the proxy's memory and temp files at peak")
}
