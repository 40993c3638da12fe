package websocket

import (
	"fmt"
	"io"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: ws-runs.csv's rows.
type Result struct {
	lab.MatrixResult[recorder.WSRun]
}

// Print implements lab.Result: one row per condition over its ok runs.
func (r *Result) Print(w io.Writer) { PrintConditions(w, recorder.SummarizeWSConditions(r.Runs)) }

// PrintConditions writes the conditions as an aligned table: sockets
// opened, held to the end and refused (summed over the runs), the most
// the app held at once and the workers holding them, and /fast.
func PrintConditions(w io.Writer, conds []recorder.WSCondition) {
	fmt.Fprintf(w, "%-19s %-12s %-7s %-9s %7s %6s %14s %4s %8s %6s %5s %7s %14s %8s %15s %7s %8s %12s %11s %11s %9s %9s %11s %11s\n", "route", "server", "mode", "queue",
		"sockets", "ping_s", "read_timeout_s", "runs", "excluded", "opened", "held", "refused", "lifetime_p50_s", "app_held", "workers_holding",
		"workers", "messages", "delay_p95_ms", "app_mem_mib", "app_rss_mib", "oom_kills", "fast_ok", "fast_p50_ms", "fast_p95_ms")
	for _, c := range conds {
		readTimeout := "-"
		if c.ReadTimeoutS > 0 {
			readTimeout = fmt.Sprintf("%.0f", c.ReadTimeoutS)
		}
		queue := c.Queue
		if queue == "" {
			queue = "-"
		}
		fmt.Fprintf(w, "%-19s %-12s %-7s %-9s %7d %6.1f %14s %4d %8d %6d %5d %7d %14s %8s %15s %7s %8d %12s %11s %11s %9d %9s %11s %11s\n", c.Route, c.Server,
			c.Mode, queue, c.Sockets, c.PingS, readTimeout, c.Runs, c.Excluded, c.Opened, c.Held, c.Refused, lab.Num(c.LifetimeP50S, 2), lab.Num(c.HeldMax, 0),
			lab.Num(c.WorkersHoldingMax, 0), lab.Num(c.Workers, 0), c.Messages, lab.Num(c.DelayP95MS, 1), lab.Num(c.AppMemPeakMiB, 1), lab.Num(c.AppRSSPeakMiB, 1), c.AppOOMKills,
			fmt.Sprintf("%d/%d", c.FastOK, c.FastPlanned), lab.Num(c.P50MS, 1), lab.Num(c.P95MS, 1))
	}
	fmt.Fprintln(w, "ping_s: each client's ping interval (0: none); read_timeout_s: the proxy's proxy_read_timeout as set (-: its default, 60 s);")
	fmt.Fprintln(w, "lifetime_p50_s: median time an opened socket stayed open (an idle one through the proxy: proxy_read_timeout);")
	fmt.Fprintln(w, "opened/held/refused: sockets whose upgrade succeeded, that stayed open to the end of their hold, and that the app answered")
	fmt.Fprintln(w, "without an upgrade (426: it cannot hold one); app_held: the most sockets the app counted at once; workers_holding: the most")
	fmt.Fprintln(w, "workers holding one at once; queue: a consumers' app queue (wait: it writes when the socket takes it; unbounded: in memory);")
	fmt.Fprintln(w, "messages, delay_p95_ms: what consumers read and the worst delivery delay; app_mem_mib, app_rss_mib: the app cgroup's and")
	fmt.Fprintln(w, "processes' largest memory, and oom_kills the app processes the kernel killed for memory, over every run (a killed run is excluded)")
}
