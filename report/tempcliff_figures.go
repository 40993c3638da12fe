package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

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
		p := NewPlot(pn.name, "response size (MiB)", pn.axis)
		Grid(p, true, true)
		SetLog(&p.Y, lo, hi)
		yMin, yMax := p.Y.Min, p.Y.Max
		for i, l := range lines {
			if l.max > 0 {
				addCliff(f, p, pn.name, l.max, ColorAt(i), yMin, yMax)
			}
			if len(pts[i]) == 0 {
				continue
			}
			ln := line(pts[i], ColorAt(i))
			m := Scatter(pts[i], ColorAt(i), vg.Points(3.5))
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

// addCliff draws a line's cliff on panel p of f: a dashed vertical line
// at its proxy_max_temp_file_size maxTemp, from yMin to yMax, in the line's
// colour, with the size written beside its top.
func addCliff(f *figure, p *plot.Plot, panel string, maxTemp int64, c color.Color, yMin, yMax float64) {
	x := float64(maxTemp) / (1 << 20)
	cliff := line(plotter.XYs{{X: x, Y: yMin}, {X: x, Y: yMax}}, c)
	cliff.LineStyle.Width = vg.Points(1)
	cliff.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(cliff)
	name := "cliff: " + maxTempText(maxTemp)
	p.Legend.Add(name, cliff)
	f.addSeries(panel+", "+name, 1)
	// Its size written beside the line's top, on the axis's scale.
	if lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: yMax / 1.25}},
		Labels: []string{" " + SizeText(maxTemp)}}); err == nil {
		lb.TextStyle[0].Font = font.From(sans, 9)
		lb.TextStyle[0].Color = c
		p.Add(lb)
	}
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
	f := &figure{name: name, title: "Bytes received per download", width: 8 * vg.Inch, height: RowsHeight(len(rows))}
	p := NewPlot(f.title, "MiB", "condition")
	Grid(p, true, false)
	labels := make([]string, len(rows))
	sizes := make([]float64, len(rows))
	for j, i := range rows {
		labels[j] = label(d.conds[i])
		sizes[j] = float64(d.conds[i].SizeBytes) / (1 << 20)
	}
	ys := ConditionRows(p, labels)
	sb := NewBars(ys, sizes, 0.7, true, color.Gray{0xbb})
	p.Add(sb)
	p.Legend.Add("response size", sb)
	f.addSeries("response size", sb.Drawn())
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
		m := Scatter(xys, ColorAt(oi), vg.Points(3.5))
		if o.shape != nil {
			m = Marks(xys, ColorAt(oi), o.shape)
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
