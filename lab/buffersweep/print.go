package buffersweep

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Print implements lab.Result: the cells table a kernel setting at a
// time, each part under its kernel's socket buffer settings, then the
// table's legend.
func (r *Result) Print(w io.Writer) {
	if len(r.Cells) == 0 {
		fmt.Fprintln(w, "buffer-sweep: no cell completed")
		return
	}
	text := cellsTable
	text.Legend = nil // once, below every part
	for rest := r.Cells; len(rest) > 0; {
		n := 1 + slices.IndexFunc(rest[1:], func(c Cell) bool { return c.Kernel != rest[0].Kernel })
		if n == 0 {
			n = len(rest)
		}
		fmt.Fprintf(w, "\nkernel %s: tcp_wmem %s, tcp_rmem %s\n", rest[0].Kernel, rest[0].TCPWmem, rest[0].TCPRmem)
		text.WriteText(w, rest[:n])
		rest = rest[n:]
	}
	fmt.Fprintf(w, "\n%s\n", strings.Join(cellsTable.Legend, "\n"))
}

// cellsTable is sweep.csv's cells, printed by the CLI (a kernel setting
// at a time, the kernel above its rows) and drawn in the report, which
// adds the columns the text has no room for.
var cellsTable = report.Table[Cell]{
	Caption: "Cells (" + sweepFile + "): /fast p95 is the median over the cell's ok runs of each run's nearest-rank 95th " +
		"percentile; measured values are medians over the cell's complete downloads, as are client_receive. The capacity's " +
		"error is empty where size ≤ predicted capacity: the model says the path holds the whole response (app_send " +
		"predicted 0), and a download never has more than its size in flight, so the samples cannot show the capacity. " +
		"Directory: the cell's slow-client results, relative to this one.",
	Legend: []string{
		"predicted: before the run, from configuration only (the namespace's tcp_wmem, tcp_rmem, the app's, proxy's and client's buffers);",
		"app_send predicted = max(0, size - capacity predicted) / rate; measured: capacity is the most bytes a download had in flight",
		"between app and client (hops.csv), app_send the app's send log; error % = (measured - predicted) / predicted,",
		"the capacity's only where size > capacity predicted (a download never has more than its size in flight)",
	},
	Cols: []report.Column[Cell]{
		report.HTMLCol("kernel", func(c *Cell) report.Cell { return report.Text(c.Kernel) }),
		report.Col("route", func(c *Cell) report.Cell { return report.Text(c.Route) }),
		report.HTMLCol("server", func(c *Cell) report.Cell { return report.Text(c.Server) }),
		report.HTMLCol("slow clients", func(c *Cell) report.Cell { return report.Int(c.SlowClients) }),
		report.Col("size", func(c *Cell) report.Cell {
			return report.Cell{Text: bytesize.Format(c.SizeBytes), Title: fmt.Sprint(c.SizeBytes, " bytes"), Num: true}
		}),
		report.Col("rate/s", func(c *Cell) report.Cell {
			return report.Cell{Text: bytesize.Format(c.RateBps), Title: fmt.Sprint(c.RateBps, " bytes/s"), Num: true}
		}),
		report.Col("runs ok", func(c *Cell) report.Cell { return report.Cell{Text: fmt.Sprintf("%d/%d", c.RunsOK, c.Runs), Num: true} }),
		report.Col("/fast p95 ms", func(c *Cell) report.Cell { return report.Opt(c.FastP95MS, report.Decimals(1)) }),
		report.Col("capacity predicted MiB", func(c *Cell) report.Cell { return report.Opt(lab.MiB(c.CapacityPredictedBytes), report.Decimals(2)) }),
		report.Col("measured MiB", func(c *Cell) report.Cell { return report.Opt(lab.MiB(c.CapacityMeasuredBytes), report.Decimals(2)) }),
		report.Col("error %", func(c *Cell) report.Cell { return report.Opt(capacityError(*c), report.Decimals(0)) }),
		report.Col("app_send predicted s", func(c *Cell) report.Cell { return report.Opt(c.AppSendPredictedS, report.Decimals(2)) }),
		report.Col("measured s", func(c *Cell) report.Cell { return report.Opt(c.AppSendMeasuredS, report.Decimals(2)) }),
		report.Col("error %", func(c *Cell) report.Cell { return report.Opt(c.PredictionErrorPct, report.Decimals(0)) }),
		report.HTMLCol("size > predicted capacity", func(c *Cell) report.Cell {
			return report.Opt(c.CapacityPredictedBytes, func(capacity float64) report.Cell {
				if float64(c.SizeBytes) > capacity {
					return report.Text("yes")
				}
				return report.Text("no")
			})
		}),
		report.HTMLCol("client_receive (s)", func(c *Cell) report.Cell { return report.Opt(c.ClientReceiveS, report.Decimals(3)) }),
		report.HTMLCol("directory", func(c *Cell) report.Cell { return report.Text(c.Dir) }),
	},
}

// capacityError is the measured capacity's error against the predicted,
// where the model says the download fills the path (size > predicted
// capacity); elsewhere the samples cannot show the path's capacity, since
// a download never has more than its size in flight.
func capacityError(c Cell) recorder.Maybe {
	if !c.CapacityPredictedBytes.Valid || float64(c.SizeBytes) <= c.CapacityPredictedBytes.Value {
		return recorder.None()
	}
	return errorPct(c.CapacityMeasuredBytes, c.CapacityPredictedBytes)
}

// errorPct is how far measured is from predicted, in percent of the
// prediction; none when either is missing or the prediction is 0.
func errorPct(measured, predicted recorder.Maybe) recorder.Maybe {
	if !measured.Valid || !predicted.Valid || predicted.Value == 0 {
		return recorder.None()
	}
	return recorder.Some((measured.Value - predicted.Value) / predicted.Value * 100)
}
