package stalledreader

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel/holds"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: stalled-runs.csv's rows (its ReasonsFile)
// and the conditions the stack could not run.
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the conditions table (lab.PrintResult
// then names the conditions the stack could not run).
func (r *Result) Print(w io.Writer) { conditionsTable.WriteText(w, Summarize(r.Runs)) }

// timeout is a timeout's cell: whole seconds, "-" where unset.
func timeout(m recorder.Maybe) report.Cell {
	return report.Opt(m, func(v float64) report.Cell { return report.Cell{Text: fmt.Sprintf("%.0fs", v), Num: true} })
}

// mib is a byte count's cell in MiB with two decimals.
func mib(v float64) report.Cell { return report.Fixed(v/(1<<20), 2) }

// conditionsTable is the conditions table, printed by the CLI and drawn
// in the report.
var conditionsTable = report.Table[Summary]{
	Caption: "stalled-reader conditions (" + runFile + "), over the ok runs: /fast ok of total and its p95 (nearest rank in a " +
		"run, median over runs), every download by outcome and by the component that ended it (from the logs' evidence about " +
		"each download), the median bytes received (median over runs of each run's median), WORKER TIMEOUT lines (summed) and " +
		"the longest the app held a worker on a download (median over runs). The figures' labels give each condition's stall " +
		"or read rate, the bytes figure's bars its response size and the /fast figure its p50.",
	Legend: []string{
		"app_to: the app's timeout (Gunicorn --timeout), send_to: the proxy's send_timeout (- where unset or no proxy); fast_ok and p95_ms:",
		"/fast requests ok of all scheduled and their p95 (nearest rank, median over the ok runs); outcomes: every download of the ok runs by how it",
		"ended (trunc: EOF before Content-Length); ended_by: the component its logs say ended it; bytes_mib: median bytes received;",
		"killed: WORKER TIMEOUT lines in the runs' logs; app_held_s: the longest the app held a worker on a download (median over runs)",
	},
	Cols: []report.Column[Summary]{
		report.Col("route", func(c *Summary) report.Cell { return report.Text(c.Route) }),
		report.Col("server", func(c *Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("mode", func(c *Summary) report.Cell { return report.Text(c.Mode) }),
		report.Col("clients", func(c *Summary) report.Cell { return report.Int(c.Clients) }),
		report.Col("app_to", func(c *Summary) report.Cell { return timeout(c.AppTimeoutS) }),
		report.Col("send_to", func(c *Summary) report.Cell { return timeout(c.SendTimeoutS) }),
		report.Col("runs", func(c *Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excl", func(c *Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("fast_ok", func(c *Summary) report.Cell {
			return report.Cell{Text: fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal), Num: true}
		}),
		report.Col("p95_ms", func(c *Summary) report.Cell { return report.Opt(c.P95MS, report.Decimals(1)) }),
		report.Col("outcomes(ok/trunc/reset/timeout/other)", func(c *Summary) report.Cell {
			return report.Text(fmt.Sprintf("%d/%d/%d/%d/%d", c.Complete, c.Truncated, c.Reset, c.Timeout, c.Other))
		}),
		report.Col("ended_by(app/send/client/unknown)", func(c *Summary) report.Cell {
			return report.Text(fmt.Sprintf("%d/%d/%d/%d", c.ByAppTimeout, c.BySendTimeout, c.ByClient, c.ByUnknown))
		}),
		report.Col("bytes_mib", func(c *Summary) report.Cell { return report.Opt(c.BytesMedian, mib) }),
		report.Col("killed", func(c *Summary) report.Cell { return report.Opt(c.WorkerTimeouts, report.Decimals(0)) }),
		report.Col("app_held_s", func(c *Summary) report.Cell { return report.Opt(c.AppHeldS, report.Decimals(2)) }),
	},
}

// downloadsTable lists every download of the ok runs, in the report.
var downloadsTable = report.Table[Download]{
	Details: "Every download of the ok runs",
	Caption: "Every download of the ok runs (" + downloadFile + "): when it stopped reading, resumed, read its last byte and " +
		"ended (seconds from its request), the bytes it received of Content-Length, the status, the app's own send time " +
		"(none: the app left no record, as a killed worker does), its outcome and its ender.",
	Cols: []report.Column[Download]{
		report.Col("run", func(d *Download) report.Cell { return report.Text(d.RunID) }),
		report.Col("client", func(d *Download) report.Cell { return report.Int(d.Client) }),
		report.Col("stalled (s)", func(d *Download) report.Cell { return report.Opt(d.StalledS, report.Decimals(3)) }),
		report.Col("resumed (s)", func(d *Download) report.Cell { return report.Opt(d.ResumedS, report.Decimals(3)) }),
		report.Col("last byte (s)", func(d *Download) report.Cell { return report.Opt(d.LastByteS, report.Decimals(3)) }),
		report.Col("end (s)", func(d *Download) report.Cell { return report.Fixed(d.EndS, 3) }),
		report.Col("received (MiB)", func(d *Download) report.Cell { return mib(float64(d.Bytes)) }),
		report.Col("Content-Length (MiB)", func(d *Download) report.Cell {
			var cl recorder.Maybe
			if d.ContentLength >= 0 {
				cl = recorder.Some(float64(d.ContentLength))
			}
			return report.Opt(cl, mib)
		}),
		report.Col("status", func(d *Download) report.Cell {
			if d.Status == 0 {
				return report.Text("none")
			}
			return report.Int(d.Status)
		}),
		report.Col("app send (s)", func(d *Download) report.Cell { return report.Opt(d.AppSendS, report.Decimals(3)) }),
		report.Col("outcome", func(d *Download) report.Cell { return report.Text(d.Outcome) }),
		report.Col("ended by", func(d *Download) report.Cell { return report.Text(d.EndedBy) }),
		report.Col("error", func(d *Download) report.Cell { return report.Text(d.Error) }),
	},
}

// label names a condition in a figure: route, server, how its clients
// read, and the timeouts that apply.
func label(c *Summary) string {
	how := fmt.Sprintf("%d stalled %.0f s", c.Clients, c.StallS)
	if c.Mode != ModeStall {
		how = fmt.Sprintf("%d at %.0f KiB/s", c.Clients, float64(c.RateBps)/(1<<10))
	}
	l := fmt.Sprintf("%s, %s, %s", c.Route, c.Server, how)
	if c.AppTimeoutS.Valid {
		l += fmt.Sprintf(", app %.0f s", c.AppTimeoutS.Value)
	}
	if c.SendTimeoutS.Valid {
		l += fmt.Sprintf(", send %.0f s", c.SendTimeoutS.Value)
	}
	return l
}

// Section is the stalled-reader section of the report, which the
// registration carries: the bytes each download received, /fast and the
// workers killed per condition, the conditions and every download.
var Section = lab.RunsSection(Name, runFile, func(dir string, runs []RunRow) (*report.Part, error) {
	p := report.NewPart(Name, "Clients request /large and then stop reading (stalled: a few KiB read, then nothing for the stall, then "+
		"the rest) or read it at a slow constant rate, while /fast runs on its open-loop schedule. A Gunicorn sync "+
		"worker writing to a client that does not read is held in sendall until --timeout kills it (WORKER TIMEOUT in "+
		"the log): the client gets what the socket buffers held, then EOF. A proxy's send_timeout closes a stalled "+
		"client itself; with buffering on the app was rid of the response long before. Every download's outcome is "+
		"what the client saw; the component that ended it comes from evidence about that download: a WORKER TIMEOUT "+
		"line naming the worker that served it, or the proxy's log line closing it.")
	downloads, dErr := recorder.ReadFile[Download](filepath.Join(dir, downloadFile))
	d := newSectionData(runs, downloads) // what a file that did not read gave is not drawn
	if dErr == nil {
		if f := bytesFigure(d); f != nil {
			p.AddDrawing(f)
		} else {
			p.Skip("Bytes-received figure left out: no ok run in %s has a download in %s.", runFile, downloadFile)
		}
	} else {
		p.Skip("Bytes-received figure and the downloads table left out: %v.", dErr)
	}
	var rows []report.LatencyRow // each condition with an ok run whose /fast p95 and p50 are above 0
	for i := range d.conds {
		if r, ok := report.LatencyOf(label(&d.conds[i]), d.conds[i].FastOver); ok && r.P95Min > 0 && r.P50 > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) > 0 {
		p.AddFastLatency("stalled-fast-p95", "/fast latency beside stalled readers",
			"/fast latency (ok responses) per condition: p95 = nearest-rank 95th percentile of a run, point = "+
				"median over the condition's ok runs, line = min to max over them; p50 likewise (median). Log scale. A sync "+
				"worker held by a stalled reader leaves /fast waiting until the worker is killed or the write ends.", rows)
	} else {
		p.Skip("/fast p95 figure left out: no condition in %s has an ok run with a /fast p95 above 0.", runFile)
	}
	if f := timeoutsFigure(d); f != nil {
		p.AddDrawing(f)
	} else {
		p.Skip("Worker-timeouts figure left out: no ok run in %s has its WORKER TIMEOUT lines counted.", runFile)
	}
	report.AddTable(p, &conditionsTable, d.conds)
	holds.Note(p, dir, Name)
	if dErr == nil && len(downloads) > 0 {
		report.AddTable(p, &downloadsTable, slices.Concat(d.downloads...))
	}
	return p, nil
})
