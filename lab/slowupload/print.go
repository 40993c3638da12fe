package slowupload

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: upload-runs.csv's rows (its ReasonsFile)
// and the conditions the stack could not run.
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the conditions table (lab.PrintResult
// then names the conditions the stack could not run).
func (r *Result) Print(w io.Writer) { conditionsTable.WriteText(w, Summarize(r.Runs)) }

// cell1 is a value with one decimal, "-" when not measured.
func cell1(m recorder.Maybe) report.Cell { return report.Opt(m, report.Decimals(1)) }

// conditionsTable is the conditions table, printed by the CLI and drawn
// in the report.
var conditionsTable = report.Table[Summary]{
	Caption: "slow-upload conditions (" + runFile + "), over the ok runs: /fast p50 and p95 (nearest rank in a run, median " +
		"over runs; p95 range over runs), the client's send time and the app's time in body reads (median over runs of each run's " +
		"median over its uploads that ended ok), every upload's outcome, Gunicorn's WORKER TIMEOUT lines, and the largest proxy temp files and memory peaks.",
	Legend: []string{
		"p50_ms/p95_ms: /fast latency percentiles (nearest rank) of a run, median over the ok runs; send_s: the client's time to hand its body",
		"to the socket, app_read_s: the app's time in body reads (Server-Timing body), median over runs of each run's median over its uploads that ended ok; outcomes: every",
		"upload of the ok runs by how it ended; killed: Gunicorn's WORKER TIMEOUT lines in the runs' logs; temp_peak_mib: the proxy's open temp",
		"files at their largest (request bodies spooled to disk)",
	},
	Cols: []report.Column[Summary]{
		report.Col("route", func(c *Summary) report.Cell { return report.Text(c.Route) }),
		report.Col("server", func(c *Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("uploaders", func(c *Summary) report.Cell { return report.Int(c.Uploaders) }),
		report.Col("size_mib", func(c *Summary) report.Cell {
			v := float64(c.SizeBytes) / (1 << 20)
			if v == math.Trunc(v) {
				return report.Fixed(v, 0)
			}
			return report.Fixed(v, 2)
		}),
		report.Col("timeout", func(c *Summary) report.Cell {
			if !c.AppTimeoutS.Valid {
				return report.Text("-")
			}
			return report.Cell{Text: fmt.Sprintf("%.0fs", c.AppTimeoutS.Value), Num: true}
		}),
		report.Col("runs", func(c *Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("p50_ms", func(c *Summary) report.Cell { return cell1(c.P50MS) }),
		report.Col("p95_ms", func(c *Summary) report.Cell { return cell1(c.P95MS) }),
		report.Col("p95_min-max_ms", func(c *Summary) report.Cell {
			if !c.P95MinMS.Valid {
				return report.Text("-")
			}
			return report.Cell{Text: cell1(c.P95MinMS).String() + "-" + cell1(c.P95MaxMS).String(), Num: true}
		}),
		report.Col("send_s", func(c *Summary) report.Cell { return report.Opt(c.SendS, report.Decimals(2)) }),
		report.Col("app_read_s", func(c *Summary) report.Cell { return report.Opt(c.AppReadS, report.Decimals(2)) }),
		report.Col("outcomes(ok/5xx/reset/timeout/other)", func(c *Summary) report.Cell {
			return report.Text(fmt.Sprintf("%d/%d/%d/%d/%d", c.OK, c.Err5xx, c.Reset, c.Timeout, c.Other))
		}),
		report.Col("killed", func(c *Summary) report.Cell { return report.Opt(c.WorkerTimeouts, report.Decimals(0)) }),
		report.Col("temp_peak_mib", func(c *Summary) report.Cell { return cell1(c.TempPeakMiB) }),
		report.Col("app_mem_mib", func(c *Summary) report.Cell { return cell1(c.AppMemMiB) }),
		report.Col("proxy_mem_mib", func(c *Summary) report.Cell { return cell1(c.ProxyMemMiB) }),
	},
}

// failedTable lists the uploads that did not end ok, in the report.
var failedTable = report.Table[Upload]{
	Caption: "Uploads that did not end ok (" + uploadFile + "): what the client saw. A sync worker killed by the app's " +
		"timeout resets the client's connection directly; through a proxy the client gets the proxy's 5xx.",
	Cols: []report.Column[Upload]{
		report.Col("run", func(u *Upload) report.Cell { return report.Text(u.RunID) }),
		report.Col("client", func(u *Upload) report.Cell { return report.Int(u.Client) }),
		report.Col("sent_mib", func(u *Upload) report.Cell { return report.Fixed(float64(u.SentBytes)/(1<<20), 2) }),
		report.Col("send_s", func(u *Upload) report.Cell { return report.Fixed(u.SendS, 3) }),
		report.Col("status", func(u *Upload) report.Cell {
			if u.Status == 0 {
				return report.Text("none")
			}
			return report.Int(u.Status)
		}),
		report.Col("outcome", func(u *Upload) report.Cell { return report.Text(u.Outcome) }),
		report.Col("error", func(u *Upload) report.Cell { return report.Text(u.Error) }),
	},
}

// label names a condition in the figures.
func label(c *Summary) string {
	l := fmt.Sprintf("%s, %s, %d × %.0f MiB", c.Route, c.Server, c.Uploaders, float64(c.SizeBytes)/(1<<20))
	if c.AppTimeoutS.Valid {
		l += fmt.Sprintf(", timeout %.0f s", c.AppTimeoutS.Value)
	}
	return l
}

// Section is the slow-upload section of the report, which the
// registration carries: /fast per condition, the upload times, the
// conditions and the uploads that did not end ok.
var Section = lab.RunsSection(Name, runFile, func(dir string, runs []RunRow) (*report.Part, error) {
	conds := Summarize(runs)
	p := report.NewPart(Name, "Slow clients POST their bodies at a paced rate while /fast runs on its open-loop schedule. A sync worker "+
		"reading a slow request body is as stuck as one writing to a slow reader; a proxy with request buffering on "+
		"(NGINX's default) reads the whole body first, in memory up to client_body_buffer_size and in a temp file "+
		"beyond, and hands it to the app at once. An upload that outlives the app's timeout has its worker killed: its "+
		"outcome is a reset (direct) or the proxy's 5xx.")
	var rows []report.LatencyRow
	times := &report.ConditionMarks{Name: "upload-times", Title: "Client send time and app body-read time", Axis: "seconds (log scale)",
		Series: []report.BarSeries{{Name: "client send"}, {Name: "app body read"}},
		Caption: "Median over the condition's ok runs of each run's median over its uploads that ended ok: the client's time from its request header to its last body " +
			"write returning, and the app's time in body reads as it reported it (Server-Timing body). Log scale. The app " +
			"reads as slowly as the client sends unless a proxy buffered the body first."}
	for i := range conds {
		c := &conds[i]
		if r, ok := report.LatencyOf(label(c), c.FastOver); ok && r.P95Min > 0 && r.P50 > 0 {
			rows = append(rows, r)
		}
		times.Labels = append(times.Labels, label(c))
		times.Series[0].Values = append(times.Series[0].Values, report.ValueOf(c.SendS, 1))
		times.Series[1].Values = append(times.Series[1].Values, report.ValueOf(c.AppReadS, 1))
	}
	p.AddFastLatency("upload-fast-p95", "/fast latency under slow uploads",
		"/fast latency (actual start to last body byte, ok responses) per condition: p95 = nearest-rank 95th "+
			"percentile of a run, point = median over the condition's ok runs, line = min to max over them; p50 likewise "+
			"(median). Log scale. Direct sync workers reading slow uploads leave /fast waiting for a worker; request "+
			"buffering on keeps it at the no-upload level.", rows)
	if !p.AddMarks(times) {
		p.Skip("Upload times figure left out: no condition in %s has an upload that ended ok.", runFile)
	}
	report.AddTable(p, &conditionsTable, conds)
	uploads, err := recorder.ReadFile[Upload](filepath.Join(dir, uploadFile))
	if err != nil {
		p.Skip("Uploads that did not end ok left out: %v.", err)
		return p, nil
	}
	if failed := slices.DeleteFunc(uploads, func(u Upload) bool { return u.Outcome == loadgen.UploadOK }); len(failed) > 0 {
		report.AddTable(p, &failedTable, failed)
	}
	return p, nil
})
