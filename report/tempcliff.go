package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/slowlab/slowlab/recorder"
)

// The temp-cliff and temp-disk-full results files: both experiments write
// temp-runs.csv, which marks the directory (environment.json's experiment
// picks the section; without it both are drawn), and each download's row
// in large-responses.csv.
var (
	tempRunsFile      = recorder.FileName[recorder.TempRun]()
	tempDownloadsFile = recorder.FileName[recorder.LargeResponse]()
)

// TempCliff is the temp-cliff section, which temp-cliff's registration in lab carries.
var TempCliff = Section{Name: "temp-cliff", Marker: tempRunsFile, build: buildTempCliff}

// tempKey identifies a condition, as recorder.SummarizeTempConditions
// groups runs.
type tempKey struct {
	server        string
	slow          int
	size, max, fs int64
}

func tempRunKey(r recorder.TempRun) tempKey {
	return tempKey{r.Server, r.SlowClients, r.SizeBytes, r.MaxTempFileBytes, r.TempTmpfsBytes}
}

func tempCondKey(c recorder.TempCondition) tempKey {
	return tempKey{c.Server, c.SlowClients, c.SizeBytes, c.MaxTempFileBytes, c.TempTmpfsBytes}
}

// maxTempText names a proxy_max_temp_file_size.
func maxTempText(b int64) string {
	if b == 0 {
		return "max temp 0 (memory buffers only)"
	}
	return "max temp " + SizeText(b)
}

// tempDirText names where the proxy's temp dir was.
func tempDirText(tmpfs int64) string {
	if tmpfs == 0 {
		return "temp dir on disk"
	}
	return "temp dir on tmpfs (" + SizeText(tmpfs) + ")"
}

// tempLabel names a condition in a figure.
func tempLabel(c recorder.TempCondition) string {
	l := fmt.Sprintf("%s, %d × %s, %s", c.Server, c.SlowClients, SizeText(c.SizeBytes), maxTempText(c.MaxTempFileBytes))
	if c.TempTmpfsBytes != 0 {
		l += ", " + SizeText(c.TempTmpfsBytes) + " tmpfs"
	}
	return l
}

// tempData is what both sections draw: the runs and their conditions, and
// the downloads of each condition's ok runs.
type tempData struct {
	runs  []recorder.TempRun
	conds []recorder.TempCondition
	// downloads[i] are the downloads of conds[i]'s ok runs, in file order.
	downloads [][]recorder.LargeResponse
	// sizes maps a run to its response size (large-responses.csv has none).
	sizes map[string]int64
	// left counts downloads of runs that did not end ok; stray those of
	// no run in temp-runs.csv.
	left, stray int
	// noDownloads says why downloads is empty: large-responses.csv is
	// missing.
	noDownloads string
}

// readTemp reads temp-runs.csv and, when present, large-responses.csv.
func readTemp(dir string) (*tempData, error) {
	runs, err := recorder.ReadFile[recorder.TempRun](filepath.Join(dir, tempRunsFile))
	if err != nil {
		return nil, err
	}
	d := &tempData{runs: runs, conds: recorder.SummarizeTempConditions(runs), sizes: map[string]int64{}}
	d.downloads = make([][]recorder.LargeResponse, len(d.conds))
	index := map[tempKey]int{}
	for i, c := range d.conds {
		index[tempCondKey(c)] = i
	}
	byRun := map[string]recorder.TempRun{}
	for _, r := range runs {
		byRun[r.RunID] = r
		d.sizes[r.RunID] = r.SizeBytes
	}
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, tempDownloadsFile))
	if errors.Is(err, fs.ErrNotExist) {
		d.noDownloads = fmt.Sprintf("%s is not present", tempDownloadsFile)
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	for _, l := range larges {
		r, ok := byRun[l.RunID]
		switch {
		case !ok:
			d.stray++
		case r.Status != recorder.RunOK:
			d.left++
		default:
			i := index[tempRunKey(r)]
			d.downloads[i] = append(d.downloads[i], l)
		}
	}
	return d, nil
}

// notes records in s what readTemp left out.
func (d *tempData) notes(s *section) {
	if d.noDownloads != "" {
		s.skip("Downloads figure and table left out: %s.", d.noDownloads)
	}
	if d.stray > 0 {
		s.skip("%d rows of %s belong to no run of %s and are left out.", d.stray, tempDownloadsFile, tempRunsFile)
	}
}

func buildTempCliff(dir string) (*section, error) {
	d, err := readTemp(dir)
	if err != nil {
		return nil, err
	}
	s := &section{id: "temp-cliff", title: "temp-cliff",
		intro: "Slow readers download /large through the proxy with buffering on while /fast runs on its open-loop " +
			"schedule. The proxy spools what the client has not read yet to a temp file of at most " +
			"proxy_max_temp_file_size: a response that fits frees the app in milliseconds; beyond the limit the proxy reads " +
			"from the app only as fast as the client drains, so the app is held writing again and a sync server's /fast " +
			"waits. With 0 there is no temp file (memory buffers only), as with buffering off."}
	if f, why := tempCliffFigure(d.conds); f != nil {
		s.addFigure(f)
	} else {
		s.skip("app_send_s and /fast p95 figure left out: %s.", why)
	}
	d.notes(s)
	if f := tempDownloadsFigure(d, "temp-cliff-downloads", tempLabel); f != nil {
		s.addFigure(f)
	} else if d.noDownloads == "" {
		s.skip("Downloads figure left out: no download of an ok run in %s.", tempDownloadsFile)
	}
	s.addTable(tempConditionsTable(d.conds, "temp-cliff"))
	if t := tempDownloadsTable(d); t != nil {
		t.Details = fmt.Sprintf("Every download of the ok runs (%s)", tempDownloadsFile)
		s.addTable(t)
	}
	return s, nil
}

// tempConditionsTable is the conditions table of either section.
func tempConditionsTable(conds []recorder.TempCondition, experiment string) *table {
	t := &table{Caption: experiment + " conditions (" + tempRunsFile + "), over the ok runs: /fast requests ok of " +
		"those accounted, p50 and p95 (nearest rank in a run, median over runs; p95 range over runs), app_send_s and the " +
		"complete downloads' receive time (medians of the runs' medians), downloads complete and cut (summed), the fewest " +
		"bytes a download received, the proxy's temp files at their largest, the least space the exporter saw available on " +
		"the temp filesystem (slowlab_proxy_temp_fs_avail_bytes), the proxy's error lines (summed), the failed temp writes " +
		"the exporter counted in them (slowlab_proxy_temp_write_errors_total, summed), and memory peaks.",
		Head: []string{"server", "slow", "size (MiB)", "max temp (MiB)", "tmpfs (MiB)", "runs", "excluded", "/fast ok", "p50 (ms)",
			"p95 (ms)", "p95 min (ms)", "p95 max (ms)", "app_send (s)", "receive (s)", "complete", "cut", "fewest (MiB)",
			"temp peak (MiB)", "temp fs avail min (MiB)", "proxy errors", "exporter temp write errors", "app memory (MiB)", "proxy memory (MiB)"}}
	for _, c := range conds {
		tmpfs := Text("disk")
		if c.TempTmpfsBytes != 0 {
			tmpfs = Fixed(float64(c.TempTmpfsBytes)/(1<<20), 1)
		}
		t.Rows = append(t.Rows, []Cell{Text(c.Server), Int(c.SlowClients), Fixed(float64(c.SizeBytes)/(1<<20), 1),
			Fixed(float64(c.MaxTempFileBytes)/(1<<20), 1), tmpfs, Int(c.Runs), Int(c.Excluded),
			Text(fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal)), Opt(c.P50MS, Sig), Opt(c.P95MS, Sig), Opt(c.P95MinMS, Sig),
			Opt(c.P95MaxMS, Sig), Opt(c.AppSendS, seconds), Opt(c.ReceiveS, seconds), Int(c.Complete), Int(c.Cut),
			Opt(c.BytesMinMiB, func(v float64) Cell { return Fixed(v, 2) }), Opt(c.TempPeakMiB, mib),
			Opt(c.TempFSAvailMinMiB, func(v float64) Cell { return Fixed(v, 2) }), Int(c.ProxyErrors),
			Opt(c.ExporterTempWriteErrors, whole), Opt(c.AppMemMiB, mib), Opt(c.ProxyMemMiB, mib)})
	}
	return t
}

// tempDownloadsTable lists the downloads of the ok runs; nil when there
// are none.
func tempDownloadsTable(d *tempData) *table {
	t := &table{Caption: "Downloads (" + tempDownloadsFile + "): the bytes received of the response's size, the client's " +
		"time, the app's time to write it (missing when the app never reported finishing), and how it ended.",
		Head: []string{"run", "client", "status", "size (MiB)", "received (MiB)", "received (%)", "receive (s)", "app_send (s)",
			"outcome", "error"}}
	for i := range d.conds {
		for _, l := range d.downloads[i] {
			size := d.sizes[l.RunID]
			t.Rows = append(t.Rows, []Cell{Text(l.RunID), Int(l.Client), Int(l.Status), Fixed(float64(size)/(1<<20), 1),
				Fixed(float64(l.Bytes)/(1<<20), 2), Fixed(100*float64(l.Bytes)/float64(size), 1), seconds(l.ReceiveS),
				Opt(l.AppSendS, seconds), Text(l.Outcome), Text(l.Error)})
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}
