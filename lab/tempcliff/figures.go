package tempcliff

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// cliffSeries is one line of the cliff figure: the conditions that differ
// only in their response size.
type cliffSeries struct {
	name  string
	max   int64
	conds []Summary // by size
}

// cliffLines groups conds by everything but the size, in order of first
// appearance, each group sorted by size.
func cliffLines(conds []Summary) []cliffSeries {
	type key struct {
		server   string
		slow     int
		max, tfs int64
	}
	var keys []key
	groups := map[key][]Summary{}
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
		slices.SortStableFunc(cs, func(a, b Summary) int { return cmp.Compare(a.SizeBytes, b.SizeBytes) })
		name := MaxTempText(k.max)
		if byServer {
			name += ", " + k.server
		}
		if bySlow {
			name += fmt.Sprintf(", %d slow", k.slow)
		}
		if byTmpfs {
			name += ", " + TempDirText(k.tfs)
		}
		out = append(out, cliffSeries{name: name, max: k.max, conds: cs})
	}
	return out
}

// cliffFigure draws app_send_s (top) and /fast p95 (bottom) against the
// response size, one line per max temp size, with each line's
// proxy_max_temp_file_size marked by a dashed vertical line of its
// colour; nil and the reason when no condition has both values.
func cliffFigure(conds []Summary) (*report.Drawing, string) {
	lines := cliffLines(conds)
	type panel struct {
		name, axis string
		get        func(Summary) recorder.Maybe
	}
	panels := []panel{
		{"app_send_s", "app_send_s (s, log scale)", func(c Summary) recorder.Maybe { return c.AppSendS }},
		{"/fast p95", "/fast p95 (ms, log scale)", func(c Summary) recorder.Maybe { return c.P95MS }},
	}
	xHi := 0.0
	for _, c := range conds {
		xHi = math.Max(xHi, math.Max(float64(c.SizeBytes), float64(c.MaxTempFileBytes))/(1<<20))
	}
	f := report.NewDrawing("temp-cliff", "App send time and /fast p95 against the response size", 8*vg.Inch, 8*vg.Inch)
	drawn := 0
	var left []string
	for _, pn := range panels {
		lo, hi := math.Inf(1), math.Inf(-1)
		pts := make([]plotter.XYs, len(lines))
		for i, l := range lines {
			for _, c := range l.conds {
				v := pn.get(c)
				if !v.Valid || v.Value <= 0 {
					left = append(left, fmt.Sprintf("%s of %s", pn.name, label(&c)))
					continue
				}
				pts[i] = append(pts[i], plotter.XY{X: float64(c.SizeBytes) / (1 << 20), Y: v.Value})
				lo, hi = math.Min(lo, v.Value), math.Max(hi, v.Value)
			}
		}
		if math.IsInf(lo, 1) {
			continue
		}
		p := report.NewPlot(pn.name, "response size (MiB)", pn.axis)
		report.Grid(p, true, true)
		report.SetLog(&p.Y, lo, hi)
		yMin, yMax := p.Y.Min, p.Y.Max
		for i, l := range lines {
			if l.max > 0 {
				addCliff(f, p, pn.name, l.max, report.ColorAt(i), yMin, yMax)
			}
			if len(pts[i]) == 0 {
				continue
			}
			ln := report.Line(pts[i], report.ColorAt(i))
			m := report.Scatter(pts[i], report.ColorAt(i), vg.Points(3.5))
			p.Add(ln, m)
			p.Legend.Add(l.name, ln, m)
			f.AddSeries(pn.name+", "+l.name, len(m.XYs))
			drawn++
		}
		p.Y.Min, p.Y.Max = yMin, yMax
		p.X.Min, p.X.Max = 0, xHi*1.08
		p.Legend.Left = true
		f.AddPanel(p)
	}
	if drawn == 0 {
		return nil, fmt.Sprintf("no condition in %s has an ok run with app_send_s or a /fast p95 above 0", runFile)
	}
	caption := fmt.Sprintf("Each condition of %s over its ok runs, against its response size, one line per "+
		"proxy_max_temp_file_size: app_send_s = the app's time to write the response to its socket (median over a run's "+
		"downloads, then over the runs); /fast p95 = nearest-rank 95th percentile of a run's /fast latencies, median over "+
		"the runs. Log scales. Dashed vertical line: the line's proxy_max_temp_file_size, the cliff: a response above it "+
		"(plus what the kernel's socket buffers hold) holds the app until the client has nearly drained it. A max temp "+
		"size of 0 has no temp file and no cliff.", runFile)
	if len(left) > 0 {
		caption += fmt.Sprintf(" Not drawn (no value above 0): %s.", strings.Join(left, "; "))
	}
	f.SetCaption(caption)
	return f, ""
}

// addCliff draws a line's cliff on panel p of f: a dashed vertical line
// at its proxy_max_temp_file_size maxTemp, from yMin to yMax, in the line's
// colour, with the size written beside its top.
func addCliff(f *report.Drawing, p *plot.Plot, panel string, maxTemp int64, c color.Color, yMin, yMax float64) {
	x := float64(maxTemp) / (1 << 20)
	cliff := report.Line(plotter.XYs{{X: x, Y: yMin}, {X: x, Y: yMax}}, c)
	cliff.LineStyle.Width = vg.Points(1)
	cliff.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(cliff)
	name := "cliff: " + MaxTempText(maxTemp)
	p.Legend.Add(name, cliff)
	f.AddSeries(panel+", "+name, 1)
	// Its size written beside the line's top, on the axis's scale.
	if lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: yMax / 1.25}},
		Labels: []string{" " + report.SizeText(maxTemp)}}); err == nil {
		lb.TextStyle[0].Font = report.Font(9)
		lb.TextStyle[0].Color = c
		p.Add(lb)
	}
}

// downloadKinds are how a download is drawn: complete, cut with a short
// body, or cut otherwise (client_error, app_unfinished), in the order
// downloadKind numbers them, each in its colour.
var downloadKinds = []report.DownloadKind{
	{Name: "complete", Color: report.ColorAt(0)}, // a circle
	{Name: "cut (" + recorder.DownloadShortBody + ")", Color: report.ColorAt(1), Shape: draw.TriangleGlyph{}},
	{Name: "cut (other)", Color: report.ColorAt(2), Shape: draw.CrossGlyph{}},
}

// downloadKind is l's kind: its index in downloadKinds.
func downloadKind(l recorder.LargeResponse) int {
	switch {
	case l.Complete:
		return 0
	case l.Outcome == recorder.DownloadShortBody:
		return 1
	}
	return 2
}

// AddDownloadsFigure adds the downloads figure named name, each condition
// named by label: per condition with downloads, the response size as a
// bar and each download's received bytes as a point shaped by its
// outcome; or it says why there is none.
func (d *Data) AddDownloadsFigure(p *report.Part, name string, label func(*Summary) string) {
	f := &report.ReceivedBytes{Name: name, Title: "Bytes received per download", XLabel: "MiB", Width: 8 * vg.Inch,
		Room: 1.5, SizeLine: color.Gray{0xbb}, Kinds: downloadKinds, Left: d.left}
	for i := range d.Conds {
		row := report.DownloadRow{Label: label(&d.Conds[i]), Size: d.Conds[i].SizeBytes}
		for _, l := range d.downloads[i] {
			row.Downloads = append(row.Downloads, report.Received{Bytes: l.Bytes, Kind: downloadKind(l)})
		}
		f.Rows = append(f.Rows, row)
	}
	f.Caption = fmt.Sprintf("Every download of the ok runs (%s): the body bytes the client received, against the "+
		"response's size (bar). Shape: complete (every byte, status 200), cut with a short body (a 200, then EOF before "+
		"Content-Length: what the proxy does when its temp write fails), or cut otherwise (an error or a status other "+
		"than 200). Downloads of one condition are spread vertically.", downloadFile)
	if fig := f.Drawing(); fig != nil {
		p.AddDrawing(fig)
	} else if d.noDownloads == "" {
		p.Skip("Downloads figure left out: no download of an ok run in %s.", downloadFile)
	}
}
