package slowupload

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: upload-runs.csv's rows (its ReasonsFile)
// and the conditions the stack could not run.
type Result struct {
	lab.MatrixResult[recorder.UploadRun]
}

// Print implements lab.Result.
func (r *Result) Print(w io.Writer) {
	PrintTable(w, r.Runs)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
}

// PrintTable writes the conditions table as aligned text, then what its
// columns mean.
func PrintTable(w io.Writer, runs []recorder.UploadRun) {
	fmt.Fprintf(w, "%-27s %-12s %9s %8s %7s %4s %8s %8s %8s %17s %7s %10s %s %8s %13s %11s %13s\n", "route", "server", "uploaders", "size_mib", "timeout",
		"runs", "excluded", "p50_ms", "p95_ms", "p95_min-max_ms", "send_s", "app_read_s", "outcomes(ok/5xx/reset/timeout/other)", "killed",
		"temp_peak_mib", "app_mem_mib", "proxy_mem_mib")
	for _, r := range recorder.SummarizeUploadConditions(runs) {
		timeout := "-"
		if r.AppTimeoutS.Valid {
			timeout = fmt.Sprintf("%.0fs", r.AppTimeoutS.Value)
		}
		rng := "-"
		if r.P95MinMS.Valid {
			rng = lab.Num(r.P95MinMS, 1) + "-" + lab.Num(r.P95MaxMS, 1)
		}
		outcomes := fmt.Sprintf("%d/%d/%d/%d/%d", r.OK, r.Err5xx, r.Reset, r.Timeout, r.Other)
		fmt.Fprintf(w, "%-27s %-12s %9d %8s %7s %4d %8d %8s %8s %17s %7s %10s %-36s %8s %13s %11s %13s\n", r.Route, r.Server, r.Uploaders,
			mib(r.SizeBytes), timeout, r.Runs, r.Excluded, lab.Num(r.P50MS, 1), lab.Num(r.P95MS, 1), rng, lab.Num(r.SendS, 2),
			lab.Num(r.AppReadS, 2), outcomes, lab.Num(r.WorkerTimeouts, 0), lab.Num(r.TempPeakMiB, 1), lab.Num(r.AppMemMiB, 1), lab.Num(r.ProxyMemMiB, 1))
	}
	fmt.Fprintln(w, strings.Join([]string{
		"p50_ms/p95_ms: /fast latency percentiles (nearest rank) of a run, median over the ok runs; send_s: the client's time to hand its body",
		"to the socket, app_read_s: the app's time in body reads (Server-Timing body), medians over the uploads that ended ok; outcomes: every",
		"upload of the ok runs by how it ended; killed: Gunicorn's WORKER TIMEOUT lines in the runs' logs; temp_peak_mib: the proxy's open temp",
		"files at their largest (request bodies spooled to disk)"}, "\n"))
}

func mib(b int64) string {
	v := float64(b) / (1 << 20)
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
