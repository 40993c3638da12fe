package idleconn

import (
	"fmt"
	"io"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: idle-runs.csv's rows (its ReasonsFile).
type Result struct {
	lab.MatrixResult[recorder.IdleRun]
}

// Print implements lab.Result.
func (r *Result) Print(w io.Writer) { PrintIdle(w, r.Runs) }

// PrintIdle writes the runs as an aligned table.
func PrintIdle(w io.Writer, runs []recorder.IdleRun) {
	fmt.Fprintf(w, "%-19s %-14s %-9s %6s %9s %6s %6s %6s %9s %9s %9s %9s %11s %11s %11s %13s %13s %7s %7s %9s %9s\n", "route", "server", "mode", "conns", "connected",
		"fin", "reset", "bound", "responded", "closed_s", "max_s", "fast_ok", "fast_p95_ms", "app_mem_mib", "app_rss_mib", "proxy_mem_mib", "proxy_rss_mib",
		"app_fds", "app_est", "proxy_fds", "proxy_est")
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			fmt.Fprintf(w, "%-19s %-14s %-9s %6d %s: %s\n", r.Route, r.Server, r.Mode, r.Conns, r.Status, r.Reason)
			continue
		}
		fmt.Fprintf(w, "%-19s %-14s %-9s %6d %9d %6d %6d %6d %9d %9s %9s %9s %11s %11s %11s %13s %13s %7s %7s %9s %9s\n", r.Route, r.Server, r.Mode, r.Conns, r.Connected,
			r.FIN, r.Reset, r.Bound, r.Responded, lab.Num(r.ServerClosedP50S, 2), lab.Num(r.ServerClosedMaxS, 2),
			fmt.Sprintf("%d/%d", r.FastOK, r.FastSent), lab.Num(r.FastP95MS, 1), lab.Num(r.AppMemMiB, 1), lab.Num(r.AppRSSMiB, 1),
			lab.Num(r.ProxyMemMiB, 1), lab.Num(r.ProxyRSSMiB, 1), lab.Num(r.AppFDs, 0), lab.Num(r.AppEstablished, 0),
			lab.Num(r.ProxyFDs, 0), lab.Num(r.ProxyEstablished, 0))
	}
	fmt.Fprintln(w, "fin/reset: connections the server closed (with a FIN, or reset); bound: still open at the holder's bound, which closed them;")
	fmt.Fprintln(w, "responded: the server sent something before it closed them (first_line in idle-conns.csv: a 408, a 400); closed_s/max_s: median and largest")
	fmt.Fprintln(w, "time the server held a connection it closed, from the connect (waiting in the accept queue counts); fds/est: peak open file")
	fmt.Fprintln(w, "descriptors and established TCP connections of the app and the proxy, from the exporter")
}
