package h2slowclient

import (
	"fmt"
	"io"
	"slices"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: h2-runs.csv's rows.
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the conditions table (lab.PrintResult
// then names the conditions the stack could not run).
func (r *Result) Print(w io.Writer) { conditionsTable.WriteText(w, Summarize(r.Runs)) }

// conditionsTable is the conditions table, printed by the CLI and drawn
// in the report.
var conditionsTable = report.Table[Summary]{
	Caption: "h2-slow-client conditions (" + runFile + "), over the ok runs: the streams' outcomes, the most slow " +
		"responses the app was writing at once against its workers, what it handed over whole, the proxy's memory and temp files, and /fast.",
	Legend: []string{
		"protocol: h2 (HTTP/2) or h3 (HTTP/3 over QUIC), what every client of the run spoke to the proxy;",
		"streams: slow streams reading /large, on one connection or a connection each (conns); fast_conn: /fast on its own",
		"connection (separate) or on the slow streams' first (shared); read: paced at slow.rate, or stalled with the window closed;",
		"conn_window: the client connections' flow-control window, shared by their streams;",
		"complete/cut/reset/failed: streams read whole, still open at the end of the hold (the client reset them), reset by the",
		"proxy (its send_timeout; reset_after_s: when, from the request), or ended otherwise;",
		"workers: the app's worker slots; app_held: the most slow responses the app was writing at once (its send log, every 200 ms);",
		"app_complete: slow responses the app handed over whole; proxy_mem_mib, temp_peak_mib: the proxy's memory and temp files at peak",
	},
	Cols: slices.Concat([]report.Column[Summary]{
		report.Col("route", func(c *Summary) report.Cell { return report.Text(c.Route) }),
		report.Col("protocol", func(c *Summary) report.Cell { return report.Text(c.Protocol) }),
		report.Col("server", func(c *Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("streams", func(c *Summary) report.Cell { return report.Int(c.Streams) }),
		report.Col("conns", func(c *Summary) report.Cell { return report.Int(c.Conns) }),
		report.Col("fast_conn", func(c *Summary) report.Cell { return report.Text(c.FastConn) }),
		report.Col("read", func(c *Summary) report.Cell { return report.Text(c.Read) }),
		report.Col("conn_window", func(c *Summary) report.Cell { return report.Int(int(c.ConnWindow)) }),
		report.Col("runs", func(c *Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("complete", func(c *Summary) report.Cell { return report.Int(c.Complete) }),
		report.Col("cut", func(c *Summary) report.Cell { return report.Int(c.Cut) }),
		report.Col("reset", func(c *Summary) report.Cell { return report.Int(c.Reset) }),
		report.Col("reset_after_s", func(c *Summary) report.Cell { return report.Opt(c.ResetAfterS, report.Decimals(2)) }),
		report.Col("failed", func(c *Summary) report.Cell { return report.Int(c.Failed) }),
		report.Col("workers", func(c *Summary) report.Cell { return report.Opt(c.Workers, report.Decimals(0)) }),
		report.Col("app_held", func(c *Summary) report.Cell { return report.Opt(c.AppHeldMax, report.Decimals(0)) }),
		report.Col("app_complete", func(c *Summary) report.Cell { return report.Int(c.AppComplete) }),
		report.Col("proxy_mem_mib", func(c *Summary) report.Cell { return report.Opt(c.ProxyMemPeakMiB, report.Decimals(1)) }),
		report.Col("temp_peak_mib", func(c *Summary) report.Cell { return report.Opt(c.TempPeakMiB, report.Decimals(1)) }),
	},
		report.FastCols(fastOver),
	),
}

// Section is the h2-slow-client section of the report, which the
// registration carries.
var Section = lab.RunsSection(Name, runFile, func(dir string, runs []RunRow) (*report.Part, error) {
	p := report.NewPart(Name, "Slow readers over HTTP/2 read /large through the proxy, slow by flow control (each stream's window), while /fast runs "+
		"on its open-loop schedule over HTTP/2, on its own connection or on the slow streams' first. The proxy speaks HTTP/1.1 to "+
		"the app with one upstream connection per stream: with buffering off each slow stream holds an app worker, so one "+
		"connection's streams can hold them all.")
	conds := Summarize(runs)
	report.AddTable(p, &conditionsTable, conds)
	report.AddFastLatencyOf(p, Name+"-fast-p95", "/fast latency beside slow HTTP/2 streams", conds, label, fastOver)
	return p, nil
})

// label names a condition in the figure: route, server, streams on
// their connections, /fast's connection and how the streams read.
func label(c *Summary) string {
	return fmt.Sprintf("%s %s %s ×%d on %d conn, /fast %s, %s", c.Route, c.Protocol, c.Server, c.Streams, c.Conns, c.FastConn, c.Read)
}

// fastOver points at a condition's /fast summary.
func fastOver(c *Summary) *recorder.FastOver { return &c.FastOver }
