package report

import (
	"fmt"

	"github.com/slowlab/slowlab/recorder"
)

// TempDiskFull is the temp-disk-full section, which temp-disk-full's registration in lab carries.
var TempDiskFull = Section{Name: "temp-disk-full", Marker: tempRunsFile, build: buildTempDisk}

// tempDiskLabel names a temp-disk-full condition by where its temp dir
// was, then the load.
func tempDiskLabel(c recorder.TempCondition) string {
	return fmt.Sprintf("%s, %s, %d × %s, %s", tempDirText(c.TempTmpfsBytes), c.Server, c.SlowClients, SizeText(c.SizeBytes),
		maxTempText(c.MaxTempFileBytes))
}

func buildTempDisk(dir string) (*section, error) {
	d, err := readTemp(dir)
	if err != nil {
		return nil, err
	}
	s := &section{id: "temp-disk-full", title: "temp-disk-full",
		intro: "Slow readers download /large through the proxy with buffering on, its temp dir on a small tmpfs mounted " +
			"in a mount namespace of the proxy's own, beside the same load with the temp dir on disk. When the tmpfs is " +
			"full the proxy's temp write fails (NGINX logs [crit] pwritev() ... failed (28: No space left on device)) and " +
			"it cuts the responses it was buffering: the client has a 200 and a body shorter than its Content-Length. " +
			"The exporter's slowlab_proxy_temp_fs_avail_bytes is the tmpfs's free space at each scrape: the proxy frees its " +
			"temp files the moment it cuts the responses, so a fill that lasts milliseconds can pass between two scrapes, " +
			"and the proxy's error lines are what always shows it. The exporter reads them too: " +
			"slowlab_proxy_temp_write_errors_total counts the failed temp writes in the proxy's error log " +
			"(alert SlowlabProxyTempWriteFailed), whenever it is scraped."}
	d.notes(s)
	if f := tempDownloadsFigure(d, "temp-disk-downloads", tempDiskLabel); f != nil {
		s.addFigure(f)
	} else if d.noDownloads == "" {
		s.skip("Downloads figure left out: no download of an ok run in %s.", tempDownloadsFile)
	}
	t := &table{Caption: "What each temp dir did (" + tempRunsFile + ", over the ok runs): downloads complete and cut " +
		"of those started, the fewest bytes one received of the response's size, the proxy's error lines (summed over " +
		"the runs), the failed temp writes the exporter counted in the proxy's error log (slowlab_proxy_temp_write_errors_total " +
		"at each run's end, summed; – when it reported none), the least space the exporter saw available on the temp " +
		"filesystem (– when it reported none), and " +
		"/fast (ok of accounted; p95: nearest rank in a run, median over the runs).",
		Head: []string{"temp dir", "server", "slow", "size (MiB)", "max temp (MiB)", "runs", "excluded", "complete", "cut",
			"fewest received (MiB)", "fewest received (%)", "proxy errors", "exporter temp write errors", "temp fs avail min (MiB)", "/fast ok", "/fast p95 (ms)"}}
	for _, c := range d.conds {
		where := "disk"
		if c.TempTmpfsBytes != 0 {
			where = SizeText(c.TempTmpfsBytes) + " tmpfs"
		}
		t.Rows = append(t.Rows, []Cell{Text(where), Text(c.Server), Int(c.SlowClients), Fixed(float64(c.SizeBytes)/(1<<20), 1),
			Fixed(float64(c.MaxTempFileBytes)/(1<<20), 1), Int(c.Runs), Int(c.Excluded), Int(c.Complete), Int(c.Cut),
			Opt(c.BytesMinMiB, func(v float64) Cell { return Fixed(v, 2) }),
			Opt(c.BytesMinMiB, func(v float64) Cell { return Fixed(100*v*(1<<20)/float64(c.SizeBytes), 1) }),
			Int(c.ProxyErrors), Opt(c.ExporterTempWriteErrors, whole), Opt(c.TempFSAvailMinMiB, func(v float64) Cell { return Fixed(v, 2) }),
			Text(fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal)), Opt(c.P95MS, Sig)})
	}
	s.addTable(t)
	if t := tempDownloadsTable(d); t != nil {
		s.addTable(t)
	}
	all := tempConditionsTable(d.conds, "temp-disk-full")
	all.Details = fmt.Sprintf("Every column of the conditions (%s)", tempRunsFile)
	s.addTable(all)
	return s, nil
}
