package tempcliff

import (
	"fmt"
	"io"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Result is what Run wrote: temp-runs.csv's rows (its ReasonsFile).
type Result struct {
	lab.MatrixResult[RunRow]
}

// Print implements lab.Result: the conditions table.
func (r *Result) Print(w io.Writer) { ConditionsTable.WriteText(w, Summarize(r.Runs)) }

// bytesCell is a size as the scenario writes it (16m, 0).
func bytesCell(b int64) report.Cell { return report.Cell{Text: bytesize.Format(b), Num: true} }

// cell1 is a value with one decimal, "-" when not measured.
func cell1(m recorder.Maybe) report.Cell { return report.Opt(m, report.Decimals(1)) }

// ConditionsTable is the conditions table of temp-cliff and
// temp-disk-full, printed by the CLI and drawn in both sections.
var ConditionsTable = report.Table[Summary]{
	Caption: "Conditions (" + runFile + "), over the ok runs: /fast, the app's time to write a response, the downloads, " +
		"the proxy's temp files, the space left on its temp filesystem, its error lines and the failed temp writes the " +
		"exporter counted in them, and memory peaks.",
	Legend: []string{
		"route: the proxy with buffering on; max_temp: proxy_max_temp_file_size (0: memory buffers only); tmpfs: the proxy's temp dir on",
		"a tmpfs of that size in its own mount namespace (disk: none). fast_ok: /fast ok of accounted, summed over the ok runs; p50_ms,",
		"p95_ms: /fast percentiles (nearest rank) of a run, median over the ok runs; p95_min-max_ms: their range; app_send_s: the app's",
		"time to write a response, median over the downloads then over runs; receive_s: the complete downloads' receive time, likewise;",
		"complete/cut: downloads summed over the ok runs; min_bytes_mib: the fewest bytes a download received; temp_peak_mib: the proxy's",
		"open temp files at their largest; fs_avail_mib: the least space the exporter saw available on the temp filesystem;",
		"proxy_errors: error lines in the proxy's logs, summed; exporter_write_errs: the exporter's slowlab_proxy_temp_write_errors_total",
		"for the proxy at each run's end (failed temp-file writes it read in the proxy's error log), summed; - when it reported none;",
		"app_mem_mib, proxy_mem_mib: memory peaks, the largest over the runs",
	},
	Cols: []report.Column[Summary]{
		report.Col("server", func(c *Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("slow", func(c *Summary) report.Cell { return report.Int(c.SlowClients) }),
		report.Col("size", func(c *Summary) report.Cell { return bytesCell(c.SizeBytes) }),
		report.Col("max_temp", func(c *Summary) report.Cell { return bytesCell(c.MaxTempFileBytes) }),
		report.Col("tmpfs", func(c *Summary) report.Cell {
			if c.TempTmpfsBytes == 0 {
				return report.Cell{Text: "disk", Num: true}
			}
			return bytesCell(c.TempTmpfsBytes)
		}),
		report.Col("runs", func(c *Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("fast_ok", func(c *Summary) report.Cell {
			return report.Cell{Text: fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal), Num: true}
		}),
		report.Col("p50_ms", func(c *Summary) report.Cell { return cell1(c.P50MS) }),
		report.Col("p95_ms", func(c *Summary) report.Cell { return cell1(c.P95MS) }),
		report.Col("p95_min-max_ms", func(c *Summary) report.Cell {
			if !c.P95MinMS.Valid {
				return cell1(c.P95MinMS)
			}
			return report.Cell{Text: cell1(c.P95MinMS).String() + "-" + cell1(c.P95MaxMS).String(), Num: true}
		}),
		report.Col("app_send_s", func(c *Summary) report.Cell { return report.Opt(c.AppSendS, report.Decimals(3)) }),
		report.Col("receive_s", func(c *Summary) report.Cell { return report.Opt(c.ReceiveS, report.Decimals(2)) }),
		report.Col("complete/cut", func(c *Summary) report.Cell {
			return report.Cell{Text: fmt.Sprintf("%d/%d", c.Complete, c.Cut), Num: true}
		}),
		report.Col("min_bytes_mib", func(c *Summary) report.Cell { return report.Opt(c.BytesMinMiB, report.Decimals(2)) }),
		report.Col("temp_peak_mib", func(c *Summary) report.Cell { return cell1(c.TempPeakMiB) }),
		report.Col("fs_avail_mib", func(c *Summary) report.Cell { return report.Opt(c.TempFSAvailMinMiB, report.Decimals(2)) }),
		report.Col("proxy_errors", func(c *Summary) report.Cell { return report.Int(c.ProxyErrors) }),
		report.Col("exporter_write_errs", func(c *Summary) report.Cell { return report.Opt(c.ExporterTempWriteErrors, report.Decimals(0)) }),
		report.Col("app_mem_mib", func(c *Summary) report.Cell { return cell1(c.AppMemMiB) }),
		report.Col("proxy_mem_mib", func(c *Summary) report.Cell { return cell1(c.ProxyMemMiB) }),
	},
}
