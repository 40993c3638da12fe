package websocket

import (
	"fmt"
	"io"
	"slices"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: ws-runs.csv's rows.
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the conditions table (lab.PrintResult
// then names the conditions the stack could not run).
func (r *Result) Print(w io.Writer) { conditionsTable.WriteText(w, Summarize(r.Runs)) }

// conditionsTable is the conditions table, printed by the CLI and drawn
// in the report: sockets opened, held to the end and refused (summed over
// the runs), the most the app held at once and the workers holding them,
// and /fast.
var conditionsTable = report.Table[Summary]{
	Caption: "websocket conditions (" + runsFile + "), over the ok runs: sockets opened, held to the end of their " +
		"hold and refused, the most the app held at once and the workers holding them, and /fast; the app's memory and OOM kills over every run.",
	Legend: []string{
		"ping_s: each client's ping interval (0: none); read_timeout_s: the proxy's proxy_read_timeout as set (-: its default, 60 s);",
		"lifetime_p50_s: median time an opened socket stayed open (an idle one through the proxy: proxy_read_timeout);",
		"opened/held/refused: sockets whose upgrade succeeded, that stayed open to the end of their hold, and that the app answered",
		"without an upgrade (426: it cannot hold one); app_held: the most sockets the app counted at once; workers_holding: the most",
		"workers holding one at once; queue: a consumers' app queue (wait: it writes when the socket takes it; unbounded: in memory);",
		"messages, delay_p95_ms: what consumers read and the largest of their sockets' p95 delivery delays (nearest rank), over the ok runs;",
		"app_mem_mib, app_rss_mib: the app cgroup's and processes' largest memory, and oom_kills the app processes the kernel killed for",
		"memory, over every run (a killed run is excluded)",
	},
	Cols: slices.Concat([]report.Column[Summary]{
		report.Col("route", func(c *Summary) report.Cell { return report.Text(c.Route) }),
		report.Col("server", func(c *Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("mode", func(c *Summary) report.Cell { return report.Text(c.Mode) }),
		report.Col("queue", func(c *Summary) report.Cell {
			if c.Queue == "" {
				return report.Text("-")
			}
			return report.Text(c.Queue)
		}),
		report.Col("sockets", func(c *Summary) report.Cell { return report.Int(c.Sockets) }),
		report.Col("ping_s", func(c *Summary) report.Cell { return report.Fixed(c.PingS, 1) }),
		report.Col("read_timeout_s", func(c *Summary) report.Cell {
			if c.ReadTimeoutS > 0 {
				return report.Fixed(c.ReadTimeoutS, 0)
			}
			return report.Text("-")
		}),
		report.Col("runs", func(c *Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("opened", func(c *Summary) report.Cell { return report.Int(c.Opened) }),
		report.Col("held", func(c *Summary) report.Cell { return report.Int(c.Held) }),
		report.Col("refused", func(c *Summary) report.Cell { return report.Int(c.Refused) }),
		report.Col("lifetime_p50_s", func(c *Summary) report.Cell { return report.Opt(c.LifetimeP50S, report.Decimals(2)) }),
		report.Col("app_held", func(c *Summary) report.Cell { return report.Opt(c.HeldMax, report.Decimals(0)) }),
		report.Col("workers_holding", func(c *Summary) report.Cell { return report.Opt(c.WorkersHoldingMax, report.Decimals(0)) }),
		report.Col("workers", func(c *Summary) report.Cell { return report.Opt(c.Workers, report.Decimals(0)) }),
		report.Col("messages", func(c *Summary) report.Cell { return report.Int(c.Messages) }),
		report.Col("delay_p95_ms", func(c *Summary) report.Cell { return report.Opt(c.DelayP95MS, report.Decimals(1)) }),
		report.Col("app_mem_mib", func(c *Summary) report.Cell { return report.Opt(c.AppMemPeakMiB, report.Decimals(1)) }),
		report.Col("app_rss_mib", func(c *Summary) report.Cell { return report.Opt(c.AppRSSPeakMiB, report.Decimals(1)) }),
		report.Col("oom_kills", func(c *Summary) report.Cell { return report.Int(c.AppOOMKills) }),
	},
		report.FastCols(fastOver),
	),
}

// The results files of the rows this package declares; runsFile marks a
// websocket results directory.
const (
	runsFile     = "ws-runs.csv"
	sessionsFile = "ws-sessions.csv"
)

// Section is the websocket section of the report, which the registration
// carries.
var Section = lab.RunsSection(Name, runsFile, func(dir string, runs []RunRow) (*report.Part, error) {
	p := report.NewPart(Name, "WebSocket clients each hold an echoing socket, idle, while /fast runs on its open-loop schedule. A socket holds "+
		"whatever serves it for its whole life: a sync worker, a thread, or nothing but memory on an event loop; through a "+
		"proxy it is a tunnel with its own upstream connection. An app that cannot hold one (a WSGI app on Gunicorn) refuses "+
		"the upgrade.")
	conds := Summarize(runs)
	report.AddTable(p, &conditionsTable, conds)
	report.AddFastLatencyOf(p, Name+"-fast-p95", "/fast latency beside held WebSockets", conds, label, fastOver)
	return p, nil
})

// label names a condition in the figure: route, server, sockets and
// mode, with its queue, ping and proxy_read_timeout where set.
func label(c *Summary) string {
	l := fmt.Sprintf("%s %s ×%d %s", c.Route, c.Server, c.Sockets, c.Mode)
	if c.Queue != "" {
		l += " " + c.Queue
	}
	if c.PingS > 0 {
		l += fmt.Sprintf(" ping %gs", c.PingS)
	}
	if c.ReadTimeoutS > 0 {
		l += fmt.Sprintf(" timeout %gs", c.ReadTimeoutS)
	}
	return l
}

// fastOver points at a condition's /fast summary.
func fastOver(c *Summary) *recorder.FastOver { return &c.FastOver }
