package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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

func init() {
	register(experiment{name: "temp-cliff", order: 10, marker: tempRunsFile, build: buildTempCliff})
}

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
	return "max temp " + sizeText(b)
}

// tempDirText names where the proxy's temp dir was.
func tempDirText(tmpfs int64) string {
	if tmpfs == 0 {
		return "temp dir on disk"
	}
	return "temp dir on tmpfs (" + sizeText(tmpfs) + ")"
}

// tempLabel names a condition in a figure.
func tempLabel(c recorder.TempCondition) string {
	l := fmt.Sprintf("%s, %d × %s, %s", c.Server, c.SlowClients, sizeText(c.SizeBytes), maxTempText(c.MaxTempFileBytes))
	if c.TempTmpfsBytes != 0 {
		l += ", " + sizeText(c.TempTmpfsBytes) + " tmpfs"
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

// cliffSeries is one line of the cliff figure: the conditions that differ
// only in their response size.
type cliffSeries struct {
	name  string
	max   int64
	conds []recorder.TempCondition // by size
}

// cliffLines groups conds by everything but the size, in order of first
// appearance, each group sorted by size.
func cliffLines(conds []recorder.TempCondition) []cliffSeries {
	type key struct {
		server   string
		slow     int
		max, tfs int64
	}
	var keys []key
	groups := map[key][]recorder.TempCondition{}
	for _, c := range conds {
		k := key{c.Server, c.SlowClients, c.MaxTempFileBytes, c.TempTmpfsBytes}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	// The name says only what differs between the lines, the max temp
	// size always.
	differ := func(f func(key) any) bool {
		return slices.ContainsFunc(keys, func(k key) bool { return f(k) != f(keys[0]) })
	}
	byServer := differ(func(k key) any { return k.server })
	bySlow := differ(func(k key) any { return k.slow })
	byTmpfs := differ(func(k key) any { return k.tfs })
	var out []cliffSeries
	for _, k := range keys {
		cs := groups[k]
		slices.SortStableFunc(cs, func(a, b recorder.TempCondition) int { return cmp.Compare(a.SizeBytes, b.SizeBytes) })
		name := maxTempText(k.max)
		if byServer {
			name += ", " + k.server
		}
		if bySlow {
			name += fmt.Sprintf(", %d slow", k.slow)
		}
		if byTmpfs {
			name += ", " + tempDirText(k.tfs)
		}
		out = append(out, cliffSeries{name: name, max: k.max, conds: cs})
	}
	return out
}

// tempCliffFigure draws app_send_s (top) and /fast p95 (bottom) against the
// response size, one line per max temp size, with each line's
// proxy_max_temp_file_size marked by a dashed vertical line of its
// colour; nil and the reason when no condition has both values.
func tempCliffFigure(conds []recorder.TempCondition) (*figure, string) {
	lines := cliffLines(conds)
	type panel struct {
		name, axis string
		get        func(recorder.TempCondition) recorder.Maybe
	}
	panels := []panel{
		{"app_send_s", "app_send_s (s, log scale)", func(c recorder.TempCondition) recorder.Maybe { return c.AppSendS }},
		{"/fast p95", "/fast p95 (ms, log scale)", func(c recorder.TempCondition) recorder.Maybe { return c.P95MS }},
	}
	xHi := 0.0
	for _, c := range conds {
		xHi = math.Max(xHi, math.Max(float64(c.SizeBytes), float64(c.MaxTempFileBytes))/(1<<20))
	}
	f := &figure{name: "temp-cliff", title: "App send time and /fast p95 against the response size", width: 8 * vg.Inch, height: 8 * vg.Inch}
	drawn := 0
	var left []string
	for _, pn := range panels {
		lo, hi := math.Inf(1), math.Inf(-1)
		pts := make([]plotter.XYs, len(lines))
		for i, l := range lines {
			for _, c := range l.conds {
				v := pn.get(c)
				if !v.Valid || v.Value <= 0 {
					left = append(left, fmt.Sprintf("%s of %s", pn.name, tempLabel(c)))
					continue
				}
				pts[i] = append(pts[i], plotter.XY{X: float64(c.SizeBytes) / (1 << 20), Y: v.Value})
				lo, hi = math.Min(lo, v.Value), math.Max(hi, v.Value)
			}
		}
		if math.IsInf(lo, 1) {
			continue
		}
		p := newPlot(pn.name, "response size (MiB)", pn.axis)
		grid(p, true, true)
		setLog(&p.Y, lo, hi)
		yMin, yMax := p.Y.Min, p.Y.Max
		for i, l := range lines {
			if l.max > 0 {
				x := float64(l.max) / (1 << 20)
				cliff := line(plotter.XYs{{X: x, Y: yMin}, {X: x, Y: yMax}}, colorAt(i))
				cliff.LineStyle.Width = vg.Points(1)
				cliff.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				p.Add(cliff)
				name := "cliff: " + maxTempText(l.max)
				p.Legend.Add(name, cliff)
				f.addSeries(pn.name+", "+name, 1)
				// Its size written beside the line's top, on the axis's scale.
				if lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: yMax / 1.25}},
					Labels: []string{" " + sizeText(l.max)}}); err == nil {
					lb.TextStyle[0].Font = font.From(sans, 9)
					lb.TextStyle[0].Color = colorAt(i)
					p.Add(lb)
				}
			}
			if len(pts[i]) == 0 {
				continue
			}
			ln := line(pts[i], colorAt(i))
			m := scatter(pts[i], colorAt(i), vg.Points(3.5))
			p.Add(ln, m)
			p.Legend.Add(l.name, ln, m)
			f.addSeries(pn.name+", "+l.name, len(m.XYs))
			drawn++
		}
		p.Y.Min, p.Y.Max = yMin, yMax
		p.X.Min, p.X.Max = 0, xHi*1.08
		p.Legend.Left = true
		f.panels = append(f.panels, p)
	}
	if drawn == 0 {
		return nil, fmt.Sprintf("no condition in %s has an ok run with app_send_s or a /fast p95 above 0", tempRunsFile)
	}
	f.caption = fmt.Sprintf("Each condition of %s over its ok runs, against its response size, one line per "+
		"proxy_max_temp_file_size: app_send_s = the app's time to write the response to its socket (median over a run's "+
		"downloads, then over the runs); /fast p95 = nearest-rank 95th percentile of a run's /fast latencies, median over "+
		"the runs. Log scales. Dashed vertical line: the line's proxy_max_temp_file_size, the cliff: a response above it "+
		"(plus what the kernel's socket buffers hold) holds the app until the client has nearly drained it. A max temp "+
		"size of 0 has no temp file and no cliff.", tempRunsFile)
	if len(left) > 0 {
		f.caption += fmt.Sprintf(" Not drawn (no value above 0): %s.", strings.Join(left, "; "))
	}
	return f, ""
}

// downloadOutcomes are how a download is drawn: complete, cut with a
// short body, or cut otherwise (client_error, app_unfinished).
var downloadOutcomes = []struct {
	name  string
	match func(recorder.LargeResponse) bool
	shape draw.GlyphDrawer // nil: a circle
}{
	{"complete", func(l recorder.LargeResponse) bool { return l.Complete }, nil},
	{"cut (" + recorder.DownloadShortBody + ")", func(l recorder.LargeResponse) bool {
		return !l.Complete && l.Outcome == recorder.DownloadShortBody
	}, draw.TriangleGlyph{}},
	{"cut (other)", func(l recorder.LargeResponse) bool {
		return !l.Complete && l.Outcome != recorder.DownloadShortBody
	}, draw.CrossGlyph{}},
}

// tempDownloadsFigure draws, per condition with downloads, the response
// size as a bar and each download's received bytes as a point shaped by
// its outcome; nil when there is no download.
func tempDownloadsFigure(d *tempData, name string, label func(recorder.TempCondition) string) *figure {
	var rows []int
	hi := 0.0
	for i, c := range d.conds {
		if len(d.downloads[i]) > 0 {
			rows = append(rows, i)
			hi = math.Max(hi, float64(c.SizeBytes)/(1<<20))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: name, title: "Bytes received per download", width: 8 * vg.Inch, height: rowsHeight(len(rows))}
	p := newPlot(f.title, "MiB", "condition")
	grid(p, true, false)
	labels := make([]string, len(rows))
	sizes := make([]float64, len(rows))
	for j, i := range rows {
		labels[j] = label(d.conds[i])
		sizes[j] = float64(d.conds[i].SizeBytes) / (1 << 20)
	}
	ys := conditionRows(p, labels)
	sb := newBars(ys, sizes, 0.7, true, color.Gray{0xbb})
	p.Add(sb)
	p.Legend.Add("response size", sb)
	f.addSeries("response size", sb.drawn())
	for oi, o := range downloadOutcomes {
		var xys plotter.XYs
		for j, i := range rows {
			ds := d.downloads[i]
			for k, l := range ds {
				if !o.match(l) {
					continue
				}
				dy := 0.0
				if len(ds) > 1 { // spread so that equal byte counts stay visible
					dy = (float64(k)/float64(len(ds)-1) - 0.5) * 0.5
				}
				xys = append(xys, plotter.XY{X: float64(l.Bytes) / (1 << 20), Y: ys[j] + dy})
				hi = math.Max(hi, float64(l.Bytes)/(1<<20))
			}
		}
		if len(xys) == 0 {
			continue
		}
		m := scatter(xys, colorAt(oi), vg.Points(3.5))
		if o.shape != nil {
			m = marks(xys, colorAt(oi), o.shape)
		}
		p.Add(m)
		p.Legend.Add(o.name, m)
		f.addSeries(o.name, len(m.XYs))
	}
	p.X.Min, p.X.Max = 0, hi*1.5 // room on the right for the legend
	f.panels = []*plot.Plot{p}
	f.caption = fmt.Sprintf("Every download of the ok runs (%s): the body bytes the client received, against the "+
		"response's size (bar). Shape: complete (every byte, status 200), cut with a short body (a 200, then EOF before "+
		"Content-Length: what the proxy does when its temp write fails), or cut otherwise (an error or a status other "+
		"than 200). Downloads of one condition are spread vertically.", tempDownloadsFile)
	if d.left > 0 {
		f.caption += fmt.Sprintf(" %d downloads of runs that did not end ok are left out.", d.left)
	}
	return f
}

// tempConditionsTable is the conditions table of either section.
// count is a whole number of a Maybe column.
func count(v float64) cell { return num(v, 0) }

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
		tmpfs := text("disk")
		if c.TempTmpfsBytes != 0 {
			tmpfs = num(float64(c.TempTmpfsBytes)/(1<<20), 1)
		}
		t.Rows = append(t.Rows, []cell{text(c.Server), integer(c.SlowClients), num(float64(c.SizeBytes)/(1<<20), 1),
			num(float64(c.MaxTempFileBytes)/(1<<20), 1), tmpfs, integer(c.Runs), integer(c.Excluded),
			text(fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal)), maybe(c.P50MS, ms), maybe(c.P95MS, ms), maybe(c.P95MinMS, ms),
			maybe(c.P95MaxMS, ms), maybe(c.AppSendS, seconds), maybe(c.ReceiveS, seconds), integer(c.Complete), integer(c.Cut),
			maybe(c.BytesMinMiB, func(v float64) cell { return num(v, 2) }), maybe(c.TempPeakMiB, mib),
			maybe(c.TempFSAvailMinMiB, func(v float64) cell { return num(v, 2) }), integer(c.ProxyErrors),
			maybe(c.ExporterTempWriteErrors, count), maybe(c.AppMemMiB, mib), maybe(c.ProxyMemMiB, mib)})
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
			t.Rows = append(t.Rows, []cell{text(l.RunID), integer(l.Client), integer(l.Status), num(float64(size)/(1<<20), 1),
				num(float64(l.Bytes)/(1<<20), 2), num(100*float64(l.Bytes)/float64(size), 1), seconds(l.ReceiveS),
				maybe(l.AppSendS, seconds), text(l.Outcome), text(l.Error)})
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}
