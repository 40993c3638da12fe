package tempcliff

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/slowlab/slowlab/lab/pathmodel/holds"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// MaxTempText names a proxy_max_temp_file_size.
func MaxTempText(b int64) string {
	if b == 0 {
		return "max temp 0 (memory buffers only)"
	}
	return "max temp " + report.SizeText(b)
}

// TempDirText names where the proxy's temp dir was.
func TempDirText(tmpfs int64) string {
	if tmpfs == 0 {
		return "temp dir on disk"
	}
	return "temp dir on tmpfs (" + report.SizeText(tmpfs) + ")"
}

// label names a condition in a figure.
func label(c *Summary) string {
	l := fmt.Sprintf("%s, %d × %s, %s", c.Server, c.SlowClients, report.SizeText(c.SizeBytes), MaxTempText(c.MaxTempFileBytes))
	if c.TempTmpfsBytes != 0 {
		l += ", " + report.SizeText(c.TempTmpfsBytes) + " tmpfs"
	}
	return l
}

// Data is what the sections of temp-cliff and temp-disk-full draw, from
// the results directory: both experiments write temp-runs.csv, which marks
// the directory (environment.json's experiment picks the section; without
// it both are drawn), and each download's row in large-responses.csv.
type Data struct {
	Conds []Summary // the runs' conditions
	// downloads[i] are the downloads of Conds[i]'s ok runs, in file order.
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

// ReadData reads temp-runs.csv and, when present, large-responses.csv.
func ReadData(dir string) (*Data, error) {
	runs, err := recorder.ReadFile[RunRow](filepath.Join(dir, runFile))
	if err != nil {
		return nil, err
	}
	d := &Data{Conds: Summarize(runs), sizes: map[string]int64{}}
	d.downloads = make([][]recorder.LargeResponse, len(d.Conds))
	cond := map[string]int{} // a run's condition, as Summarize groups them; -1 when it did not end ok
	for i, g := range recorder.GroupRuns(runs, runKey) {
		for _, r := range g.All {
			cond[r.RunID] = -1
			if r.Status == recorder.RunOK {
				cond[r.RunID] = i
			}
			d.sizes[r.RunID] = r.SizeBytes
		}
	}
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, downloadFile))
	if errors.Is(err, fs.ErrNotExist) {
		d.noDownloads = fmt.Sprintf("%s is not present", downloadFile)
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	for _, l := range larges {
		i, ok := cond[l.RunID]
		switch {
		case !ok:
			d.stray++
		case i < 0:
			d.left++
		default:
			d.downloads[i] = append(d.downloads[i], l)
		}
	}
	return d, nil
}

// Notes records in p what ReadData left out.
func (d *Data) Notes(p *report.Part) {
	if d.noDownloads != "" {
		p.Skip("Downloads figure and table left out: %s.", d.noDownloads)
	}
	switch {
	case d.stray == 1:
		p.Skip("1 row of %s belongs to no run of %s and is left out.", downloadFile, runFile)
	case d.stray > 1:
		p.Skip("%d rows of %s belong to no run of %s and are left out.", d.stray, downloadFile, runFile)
	}
}

// download is a row of the downloads table: a download and its
// response's size.
type download struct {
	l    recorder.LargeResponse
	size int64
}

// downloadsTable lists the downloads of the ok runs.
var downloadsTable = report.Table[download]{
	Caption: "Downloads (" + downloadFile + "): the bytes received of the response's size, the client's " +
		"time, the app's time to write it (missing when the app never reported finishing), and how it ended.",
	Cols: []report.Column[download]{
		report.Col("run", func(d *download) report.Cell { return report.Text(d.l.RunID) }),
		report.Col("client", func(d *download) report.Cell { return report.Int(d.l.Client) }),
		report.Col("status", func(d *download) report.Cell { return report.Int(d.l.Status) }),
		report.Col("size (MiB)", func(d *download) report.Cell { return report.Fixed(float64(d.size)/(1<<20), 1) }),
		report.Col("received (MiB)", func(d *download) report.Cell { return report.Fixed(float64(d.l.Bytes)/(1<<20), 2) }),
		report.Col("received (%)", func(d *download) report.Cell { return report.Fixed(100*float64(d.l.Bytes)/float64(d.size), 1) }),
		report.Col("receive (s)", func(d *download) report.Cell { return report.Fixed(d.l.ReceiveS, 3) }),
		report.Col("app_send (s)", func(d *download) report.Cell { return report.Opt(d.l.AppSendS, report.Decimals(3)) }),
		report.Col("outcome", func(d *download) report.Cell { return report.Text(d.l.Outcome) }),
		report.Col("error", func(d *download) report.Cell { return report.Text(d.l.Error) }),
	},
}

// AddDownloadsTable adds the table of the ok runs' downloads, folded under
// details when it is not "", unless there are none.
func (d *Data) AddDownloadsTable(p *report.Part, details string) {
	var rows []download
	for i := range d.Conds {
		for _, l := range d.downloads[i] {
			rows = append(rows, download{l, d.sizes[l.RunID]})
		}
	}
	switch {
	case len(rows) == 0:
	case details != "":
		report.AddFoldedTable(p, &downloadsTable, rows, details)
	default:
		report.AddTable(p, &downloadsTable, rows)
	}
}

// Section is the temp-cliff section of the report, which the registration
// carries: app_send_s and /fast p95 against the response size, the
// downloads, the conditions and every download.
var Section = report.NewSection(Name, runFile, func(dir string) (*report.Part, error) {
	d, err := ReadData(dir)
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, "Slow readers download /large through the proxy with buffering on while /fast runs on its open-loop "+
		"schedule. The proxy spools what the client has not read yet to a temp file of at most "+
		"proxy_max_temp_file_size: a response that fits frees the app in milliseconds; beyond the limit the proxy reads "+
		"from the app only as fast as the client drains, so the app is held writing again and a sync server's /fast "+
		"waits. With 0 there is no temp file (memory buffers only), as with buffering off.")
	if f, why := cliffFigure(d.Conds); f != nil {
		p.AddDrawing(f)
	} else {
		p.Skip("app_send_s and /fast p95 figure left out: %s.", why)
	}
	holds.Note(p, dir, Name)
	d.Notes(p)
	d.AddDownloadsFigure(p, "temp-cliff-downloads", label)
	report.AddTable(p, &ConditionsTable, d.Conds)
	d.AddDownloadsTable(p, fmt.Sprintf("Every download of the ok runs (%s)", downloadFile))
	return p, nil
})
