package sse

import (
	"fmt"
	"io"
	"slices"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: sse-runs.csv's rows (its ReasonsFile) and
// the conditions the stack could not run.
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the conditions table (lab.PrintResult
// then names the conditions the stack could not run).
func (r *Result) Print(w io.Writer) { conditionsTable.WriteText(w, Summarize(r.Runs)) }

// conditionsTable is the conditions table, printed by the CLI and drawn
// in the report.
var conditionsTable = report.Table[Summary]{
	Caption: "sse conditions (" + runFile + "), over the ok runs: events received of expected, streams complete, delivery " +
		"delay, first byte, the most streams the app held at once and the most workers holding one, and /fast.",
	Legend: []string{
		"events: tick events received / expected over the ok runs; complete: streams that ended with their end event; delay: an event's",
		"client receive time minus the server's stamp in it (p50, p95: medians of the runs' nearest-rank values; max: the largest);",
		"first_byte_ms: request to the response's first byte, median; held: most streams the app held at once; workers_holding: most",
		"workers holding a stream at once / the server's workers; fast: /fast ok of planned, latency p50 and p95 (medians over the runs)",
	},
	Cols: slices.Concat([]report.Column[Summary]{
		report.Col("route", func(c *Summary) report.Cell { return report.Text(c.Route) }),
		report.Col("server", func(c *Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("streams", func(c *Summary) report.Cell { return report.Int(c.Streams) }),
		report.Col("runs", func(c *Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("events", func(c *Summary) report.Cell {
			return report.Cell{Text: fmt.Sprintf("%d/%d", c.Events, c.EventsExpected), Num: true}
		}),
		report.Col("complete", func(c *Summary) report.Cell { return report.Int(c.StreamsComplete) }),
		report.Col("delay_p50_ms", func(c *Summary) report.Cell { return report.Opt(c.DelayP50MS, report.Decimals(1)) }),
		report.Col("delay_p95_ms", func(c *Summary) report.Cell { return report.Opt(c.DelayP95MS, report.Decimals(1)) }),
		report.Col("delay_max_ms", func(c *Summary) report.Cell { return report.Opt(c.DelayMaxMS, report.Decimals(1)) }),
		report.Col("first_byte_ms", func(c *Summary) report.Cell { return report.Opt(c.FirstByteMS, report.Decimals(1)) }),
		report.Col("held", func(c *Summary) report.Cell { return report.Opt(c.HeldMax, report.Decimals(0)) }),
		report.Col("workers_holding", func(c *Summary) report.Cell {
			return report.Cell{Text: report.Opt(c.WorkersHoldingMax, report.Decimals(0)).String() + "/" + report.Opt(c.Workers, report.Decimals(0)).String(), Num: true}
		}),
	}, report.FastCols(func(c *Summary) *recorder.FastOver { return &c.FastOver })),
}

// Section is the sse section of the report, which the registration
// carries: delivery delay and /fast per condition, and the conditions.
var Section = lab.RunsSection(Name, runFile, func(dir string, runs []RunRow) (*report.Part, error) {
	conds := Summarize(runs)
	p := report.NewPart(Name, "SSE clients each hold a stream of an event every interval, stamped with the server's clock, while /fast runs "+
		"on its open-loop schedule. An event's delivery delay is the client's clock when it had read it minus the stamp. "+
		"A stream holds its worker for its whole length whatever the proxy does, so N streams on sync-N starve /fast. "+
		"Routes ending in -http10 ask the app in HTTP/1.0 (proxy_http_version 1.0, NGINX's default): the app answers "+
		"close-delimited instead of chunked, and a buffering proxy then holds the stream until a buffer fills or it ends; "+
		"-accel-no and -accel-yes are the app's X-Accel-Buffering.")
	labels := make([]string, len(conds))
	series := func(name string, get func(*Summary) recorder.Maybe) report.BarSeries {
		s := report.BarSeries{Name: name}
		for i := range conds {
			s.Values = append(s.Values, report.ValueOf(get(&conds[i]), 1))
		}
		return s
	}
	for i, c := range conds {
		labels[i] = fmt.Sprintf("%s, %s, %d streams", c.Route, c.Server, c.Streams)
	}
	for _, m := range []*report.ConditionMarks{
		{Name: "sse-delay", Title: "SSE delivery delay", Axis: "delivery delay (ms, log scale)", Labels: labels,
			Series: []report.BarSeries{
				series("p50", func(c *Summary) recorder.Maybe { return c.DelayP50MS }),
				series("p95", func(c *Summary) recorder.Maybe { return c.DelayP95MS }),
				series("max", func(c *Summary) recorder.Maybe { return c.DelayMaxMS }),
			},
			Caption: "Each event's delivery delay: p50 and p95 are medians of the runs' nearest-rank values, max the largest. Log scale."},
		{Name: "sse-fast", Title: "/fast latency beside SSE streams", Axis: "/fast latency (ms, log scale)", Labels: labels,
			Series: []report.BarSeries{
				series("p50", func(c *Summary) recorder.Maybe { return c.P50MS }),
				series("p95", func(c *Summary) recorder.Maybe { return c.P95MS }),
			},
			Caption: "/fast latency (medians over the ok runs of each run's nearest-rank value). Log scale. " +
				"Streams as many as the sync workers leave /fast waiting for a stream to end."},
	} {
		if !p.AddMarks(m) {
			p.Skip("%s figure left out: no condition in %s has an ok run with a value above 0.", m.Title, runFile)
		}
	}
	report.AddTable(p, &conditionsTable, conds)
	return p, nil
})
