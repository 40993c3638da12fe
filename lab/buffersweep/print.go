package buffersweep

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Print implements lab.Result: one line per cell and route, the
// kernel's socket buffer settings above each setting's cells.
func (r *Result) Print(w io.Writer) { PrintSweep(w, r.Cells) }

// PrintSweep prints sweep.csv's cells.
func PrintSweep(w io.Writer, cells []recorder.SweepCell) {
	if len(cells) == 0 {
		fmt.Fprintln(w, "buffer-sweep: no cell completed")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	kernel := ""
	for _, c := range cells {
		if c.Kernel != kernel {
			kernel = c.Kernel
			tw.Flush()
			fmt.Fprintf(w, "\nkernel %s: tcp_wmem %s, tcp_rmem %s\n", c.Kernel, c.TCPWmem, c.TCPRmem)
			fmt.Fprintln(tw, "route\tsize\trate/s\truns ok\t/fast p95 ms\tcapacity predicted MiB\tmeasured MiB\terror %\tapp_send predicted s\tmeasured s\terror %\t")
		}
		mib := func(m recorder.Maybe) recorder.Maybe {
			if m.Valid {
				m.Value /= 1 << 20
			}
			return m
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Route, bytesize.Format(c.SizeBytes), bytesize.Format(c.RateBps),
			c.RunsOK, c.Runs, num(c.FastP95MS, 1), num(mib(c.CapacityPredictedBytes), 2), num(mib(c.CapacityMeasuredBytes), 2),
			num(capacityError(c), 0), num(c.AppSendPredictedS, 2), num(c.AppSendMeasuredS, 2),
			num(c.PredictionErrorPct, 0))
	}
	tw.Flush()
	fmt.Fprintln(w, "\npredicted: before the run, from configuration only (the namespace's tcp_wmem, tcp_rmem, the app's, proxy's and client's buffers);"+
		"\napp_send predicted = max(0, size - capacity predicted) / rate; measured: capacity is the most bytes a download had in flight"+
		"\nbetween app and client (hops.csv), app_send the app's send log; error % = (measured - predicted) / predicted,"+
		"\nthe capacity's only where size > capacity predicted (a download never has more than its size in flight)")
}

// capacityError is the measured capacity's error against the predicted,
// where the model says the download fills the path (size > predicted
// capacity); elsewhere the samples cannot show the path's capacity, since
// a download never has more than its size in flight.
func capacityError(c recorder.SweepCell) recorder.Maybe {
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

func num(m recorder.Maybe, decimals int) string { return lab.Num(m, decimals) }
