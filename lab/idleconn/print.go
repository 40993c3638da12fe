package idleconn

import (
	"fmt"
	"io"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: idle-runs.csv's rows (its ReasonsFile).
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the runs table, then why each run that
// did not end ok failed.
func (r *Result) Print(w io.Writer) {
	runsTable.WriteText(w, r.Runs)
	for _, run := range r.Runs {
		if run.Status != recorder.RunOK {
			fmt.Fprintf(w, "%s: %s: %s\n", run.RunID, run.Status, run.Reason)
		}
	}
}

// runsTable is the runs table, printed by the CLI and drawn in the report.
var runsTable = report.Table[RunRow]{
	Caption: "idle-connections runs (" + runFile + "; every connection in " + connFile + "): how the held connections ended, " +
		"how long the server held the ones it closed, /fast, and the app's and proxy's memory, file descriptors and " +
		"established connections at their peaks (the exporter's).",
	Legend: []string{
		"fin/reset: connections the server closed (with a FIN, or reset); bound: still open at the holder's bound (bound_s), which closed them;",
		"responded: the server sent something before it closed them (first_line in idle-conns.csv: a 408, a 400); closed_s/max_s: median and largest",
		"time the server held a connection it closed, from the connect (waiting in the accept queue counts); app_timeout_s, header_timeout_s:",
		"the app's worker timeout and the proxy's client_header_timeout as set (-: the default); fast_ok: ok of sent, fast_p95_ms nearest rank;",
		"mem/rss: peak cgroup memory and processes' RSS; fds/est: peak open file descriptors and established TCP connections",
	},
	Cols: []report.Column[RunRow]{
		report.Col("route", func(r *RunRow) report.Cell { return report.Text(r.Route) }),
		report.Col("server", func(r *RunRow) report.Cell { return report.Text(r.Server) }),
		report.Col("mode", func(r *RunRow) report.Cell { return report.Text(r.Mode) }),
		report.Col("conns", func(r *RunRow) report.Cell { return report.Int(r.Clients) }),
		report.Col("status", func(r *RunRow) report.Cell { return report.Cell{Text: r.Status, Title: r.Reason} }),
		report.Col("connected", func(r *RunRow) report.Cell { return report.Int(r.Connected) }),
		report.Col("fin", func(r *RunRow) report.Cell { return report.Int(r.FIN) }),
		report.Col("reset", func(r *RunRow) report.Cell { return report.Int(r.Reset) }),
		report.Col("bound", func(r *RunRow) report.Cell { return report.Int(r.Bound) }),
		report.Col("responded", func(r *RunRow) report.Cell { return report.Int(r.Responded) }),
		report.Col("closed_s", func(r *RunRow) report.Cell { return report.Opt(r.ServerClosedP50S, report.Decimals(2)) }),
		report.Col("max_s", func(r *RunRow) report.Cell { return report.Opt(r.ServerClosedMaxS, report.Decimals(2)) }),
		report.Col("bound_s", func(r *RunRow) report.Cell { return report.Fixed(r.BoundS, 1) }),
		report.Col("app_timeout_s", func(r *RunRow) report.Cell { return report.Opt(r.AppTimeoutS, report.Decimals(1)) }),
		report.Col("header_timeout_s", func(r *RunRow) report.Cell { return report.Opt(r.HeaderTimeoutS, report.Decimals(1)) }),
		report.Col("fast_ok", func(r *RunRow) report.Cell {
			return report.Cell{Text: fmt.Sprintf("%d/%d", r.FastOK, r.FastSent), Num: true}
		}),
		report.Col("fast_p95_ms", func(r *RunRow) report.Cell { return report.Opt(r.FastP95MS, report.Decimals(1)) }),
		report.Col("app_mem_mib", func(r *RunRow) report.Cell { return report.Opt(r.AppMemMiB, report.Decimals(1)) }),
		report.Col("app_rss_mib", func(r *RunRow) report.Cell { return report.Opt(r.AppRSSMiB, report.Decimals(1)) }),
		report.Col("proxy_mem_mib", func(r *RunRow) report.Cell { return report.Opt(r.ProxyMemMiB, report.Decimals(1)) }),
		report.Col("proxy_rss_mib", func(r *RunRow) report.Cell { return report.Opt(r.ProxyRSSMiB, report.Decimals(1)) }),
		report.Col("app_fds", func(r *RunRow) report.Cell { return report.Opt(r.AppFDs, report.Decimals(0)) }),
		report.Col("app_est", func(r *RunRow) report.Cell { return report.Opt(r.AppEstablished, report.Decimals(0)) }),
		report.Col("proxy_fds", func(r *RunRow) report.Cell { return report.Opt(r.ProxyFDs, report.Decimals(0)) }),
		report.Col("proxy_est", func(r *RunRow) report.Cell { return report.Opt(r.ProxyEstablished, report.Decimals(0)) }),
	},
}

// Section is the idle-connections section of the report, which the
// registration carries.
var Section = lab.RunsSection(Name, runFile, func(dir string, runs []RunRow) (*report.Part, error) {
	p := report.NewPart(Name, "K connections that connect and send nothing (idle) or send a request header a byte a second and never "+
		"finish it (slowloris), held against each server model directly and behind the proxy at its defaults, while "+
		"/fast runs open loop. A sync worker that accepts such a connection is held until the server's timeout ends "+
		"it (Gunicorn's --timeout kills the worker); a proxy holds them itself until its client_header_timeout and "+
		"never passes them to the app. Each connection is closed by its holder at the run's bound if the server "+
		"has not closed it.")
	if !p.AddBars(heldFigure(runs)) {
		p.Skip("Held-time figure left out: no ok run in %s had a connection the server closed or a /fast p95.", runFile)
	}
	report.AddTable(p, &runsTable, runs)
	return p, nil
})

// heldFigure is, per ok run, how long the server held the connections it
// closed (median) and /fast's p95, both in seconds: where a worker is
// held, /fast waits as long.
func heldFigure(runs []RunRow) *report.GroupedBars {
	g := &report.GroupedBars{Name: "idle-held", Title: "How long the server held idle connections, and /fast p95 meanwhile",
		XLabel: "route, server, K and mode", YLabel: "seconds",
		Series: []report.BarSeries{{Name: "held until the server closed it (median)"}, {Name: "/fast p95"}},
		Caption: "Per ok run of " + runFile + ": the median time the server held a held connection it closed " +
			"(from the connect; no bar: it closed none, every one lasted to the holder's bound), and the p95 of the /fast " +
			"requests sent meanwhile (nearest rank, in seconds)."}
	for _, r := range runs {
		if r.Status != recorder.RunOK || !(r.ServerClosedP50S.Valid || r.FastP95MS.Valid) {
			continue
		}
		route := r.Route
		if route != "direct" {
			route = "proxy" // the proxy at its defaults: the full route name is in the table
		}
		g.Categories = append(g.Categories, fmt.Sprintf("%s\n%s\n%d %s", route, r.Server, r.Clients, r.Mode))
		g.Series[0].Values = append(g.Series[0].Values, report.ValueOf(r.ServerClosedP50S, 1))
		g.Series[1].Values = append(g.Series[1].Values, report.ValueOf(r.FastP95MS, 1e-3))
	}
	return g
}
