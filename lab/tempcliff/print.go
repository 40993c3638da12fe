package tempcliff

import (
	"fmt"
	"io"
	"strings"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: temp-runs.csv's rows (its ReasonsFile).
type Result struct {
	lab.MatrixResult[recorder.TempRun]
}

// Print implements lab.Result.
func (r *Result) Print(w io.Writer) { PrintTable(w, r.Runs) }

// PrintTable writes the conditions table as aligned text, then what its
// columns mean.
func PrintTable(w io.Writer, runs []recorder.TempRun) {
	fmt.Fprintf(w, "%-8s %4s %8s %8s %6s %4s %8s %8s %8s %10s %9s %13s %13s %13s %12s %13s %19s\n", "server", "slow", "size", "max_temp", "tmpfs",
		"runs", "excluded", "fast_ok", "p95_ms", "app_send_s", "receive_s", "complete/cut", "min_bytes_mib", "temp_peak_mib", "fs_avail_mib", "proxy_errors", "exporter_write_errs")
	for _, c := range recorder.SummarizeTempConditions(runs) {
		tmpfs := "-"
		if c.TempTmpfsBytes > 0 {
			tmpfs = bytesize.Format(c.TempTmpfsBytes)
		}
		fmt.Fprintf(w, "%-8s %4d %8s %8s %6s %4d %8d %8s %8s %10s %9s %13s %13s %13s %12s %13d %19s\n", c.Server, c.SlowClients,
			bytesize.Format(c.SizeBytes), bytesize.Format(c.MaxTempFileBytes), tmpfs, c.Runs, c.Excluded,
			fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal), lab.Num(c.P95MS, 1), lab.Num(c.AppSendS, 3), lab.Num(c.ReceiveS, 2),
			fmt.Sprintf("%d/%d", c.Complete, c.Cut), lab.Num(c.BytesMinMiB, 2), lab.Num(c.TempPeakMiB, 1), lab.Num(c.TempFSAvailMinMiB, 2), c.ProxyErrors, lab.Num(c.ExporterTempWriteErrors, 0))
	}
	fmt.Fprintln(w, strings.Join([]string{
		"route: the proxy with buffering on; max_temp: proxy_max_temp_file_size (0: memory buffers only); tmpfs: the proxy's temp dir on",
		"a tmpfs of that size in its own mount namespace. p95_ms: /fast p95 (nearest rank) of a run, median over the ok runs; app_send_s:",
		"the app's time to write a response, median over the downloads then over runs; complete/cut: downloads summed over the ok runs;",
		"min_bytes_mib: the fewest bytes a download received; temp_peak_mib: the proxy's open temp files at their largest; fs_avail_mib:",
		"the least space the exporter saw available on the temp filesystem; proxy_errors: error lines in the proxy's logs, summed;",
		"exporter_write_errs: the exporter's slowlab_proxy_temp_write_errors_total for the proxy at each run's end (failed temp-file",
		"writes it read in the proxy's error log), summed; - when it reported none"}, "\n"))
}
