package buffersweep

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/proxy"
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
			fmt.Fprintln(tw, "route\tsize\trate/s\truns ok\t/fast p95 ms\tapp_send s\tpredicted s\terror %\tcapacity MiB\t")
		}
		capMiB := recorder.None()
		if c.CapacityBytes.Valid {
			capMiB = recorder.Some(c.CapacityBytes.Value / (1 << 20))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t\n", c.Route, proxy.FormatSize(c.SizeBytes), proxy.FormatSize(c.RateBps),
			c.RunsOK, c.Runs, num(c.FastP95MS, 1), num(c.AppSendS, 2), num(c.PredictedAppSendS, 2), num(c.PredictionErrorPct, 0), num(capMiB, 2))
	}
	tw.Flush()
	fmt.Fprintln(w, "\npredicted app_send = max(0, size - capacity) / rate; capacity: the most bytes a download had in flight between app and client (hops.csv)")
}

func num(m recorder.Maybe, decimals int) string { return lab.Num(m, decimals) }
