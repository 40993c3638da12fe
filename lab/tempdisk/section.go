package tempdisk

import (
	"fmt"

	"github.com/slowlab/slowlab/lab/tempcliff"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// runFile is temp-cliff's temp-runs.csv, which this experiment writes too.
var runFile = recorder.FileName[tempcliff.RunRow]()

// label names a condition by where its temp dir was, then the load.
func label(c *tempcliff.Summary) string {
	return fmt.Sprintf("%s, %s, %d × %s, %s", tempcliff.TempDirText(c.TempTmpfsBytes), c.Server, c.SlowClients,
		report.SizeText(c.SizeBytes), tempcliff.MaxTempText(c.MaxTempFileBytes))
}

// fixed2 is a value with two decimals.
var fixed2 = report.Decimals(2)

// dirsTable is what each temp dir did, in the report.
var dirsTable = report.Table[tempcliff.Summary]{
	Caption: "What each temp dir did (" + runFile + ", over the ok runs): downloads complete and cut " +
		"of those started, the fewest bytes one received of the response's size, the proxy's error lines (summed over " +
		"the runs), the failed temp writes the exporter counted in the proxy's error log (slowlab_proxy_temp_write_errors_total " +
		"at each run's end, summed; – when it reported none), the least space the exporter saw available on the temp " +
		"filesystem (– when it reported none), and " +
		"/fast (ok of accounted; p95: nearest rank in a run, median over the runs).",
	Cols: []report.Column[tempcliff.Summary]{
		report.Col("temp dir", func(c *tempcliff.Summary) report.Cell {
			if c.TempTmpfsBytes == 0 {
				return report.Text("disk")
			}
			return report.Text(report.SizeText(c.TempTmpfsBytes) + " tmpfs")
		}),
		report.Col("server", func(c *tempcliff.Summary) report.Cell { return report.Text(c.Server) }),
		report.Col("slow", func(c *tempcliff.Summary) report.Cell { return report.Int(c.SlowClients) }),
		report.Col("size (MiB)", func(c *tempcliff.Summary) report.Cell { return report.Fixed(float64(c.SizeBytes)/(1<<20), 1) }),
		report.Col("max temp (MiB)", func(c *tempcliff.Summary) report.Cell {
			return report.Fixed(float64(c.MaxTempFileBytes)/(1<<20), 1)
		}),
		report.Col("runs", func(c *tempcliff.Summary) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *tempcliff.Summary) report.Cell { return report.Int(c.Excluded) }),
		report.Col("complete", func(c *tempcliff.Summary) report.Cell { return report.Int(c.Complete) }),
		report.Col("cut", func(c *tempcliff.Summary) report.Cell { return report.Int(c.Cut) }),
		report.Col("fewest received (MiB)", func(c *tempcliff.Summary) report.Cell { return report.Opt(c.BytesMinMiB, fixed2) }),
		report.Col("fewest received (%)", func(c *tempcliff.Summary) report.Cell {
			return report.Opt(c.BytesMinMiB, func(v float64) report.Cell { return report.Fixed(100*v*(1<<20)/float64(c.SizeBytes), 1) })
		}),
		report.Col("proxy errors", func(c *tempcliff.Summary) report.Cell { return report.Int(c.ProxyErrors) }),
		report.Col("exporter temp write errors", func(c *tempcliff.Summary) report.Cell {
			return report.Opt(c.ExporterTempWriteErrors, report.Decimals(0))
		}),
		report.Col("temp fs avail min (MiB)", func(c *tempcliff.Summary) report.Cell { return report.Opt(c.TempFSAvailMinMiB, fixed2) }),
		report.Col("/fast ok", func(c *tempcliff.Summary) report.Cell {
			return report.Text(fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal))
		}),
		report.Col("/fast p95 (ms)", func(c *tempcliff.Summary) report.Cell { return report.Opt(c.P95MS, report.Sig) }),
	},
}

// Section is the temp-disk-full section of the report, which the
// registration carries: the downloads, what each temp dir did, every
// download and every column of the conditions.
var Section = report.NewSection(Name, runFile, func(dir string) (*report.Part, error) {
	d, err := tempcliff.ReadData(dir)
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, "Slow readers download /large through the proxy with buffering on, its temp dir on a small tmpfs mounted "+
		"in a mount namespace of the proxy's own, beside the same load with the temp dir on disk. When the tmpfs is "+
		"full the proxy's temp write fails (NGINX logs [crit] pwritev() ... failed (28: No space left on device)) and "+
		"it cuts the responses it was buffering: the client has a 200 and a body shorter than its Content-Length. "+
		"The exporter's slowlab_proxy_temp_fs_avail_bytes is the tmpfs's free space at each scrape: the proxy frees its "+
		"temp files the moment it cuts the responses, so a fill that lasts milliseconds can pass between two scrapes, "+
		"and the proxy's error lines are what always shows it. The exporter reads them too: "+
		"slowlab_proxy_temp_write_errors_total counts the failed temp writes in the proxy's error log "+
		"(alert SlowlabProxyTempWriteFailed), whenever it is scraped.")
	d.Notes(p)
	d.AddDownloadsFigure(p, "temp-disk-downloads", label)
	report.AddTable(p, &dirsTable, d.Conds)
	d.AddDownloadsTable(p, "")
	report.AddFoldedTable(p, &tempcliff.ConditionsTable, d.Conds, fmt.Sprintf("Every column of the conditions (%s)", runFile))
	return p, nil
})
