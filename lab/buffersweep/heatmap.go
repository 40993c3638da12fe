package buffersweep

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

	"github.com/slowlab/slowlab/report"
)

// p95Bin is one colour of the heatmaps: /fast p95 values from lo
// (inclusive) to hi (exclusive), in ms.
type p95Bin struct {
	lo, hi float64
	label  string
	fill   color.Color
	text   color.Color // of the values written on it
}

// p95Bins bin /fast p95 by decade, light to dark (viridis, which reads
// in grey and with the common colour-vision deficiencies).
var p95Bins = []p95Bin{
	{0, 10, "< 10 ms", color.RGBA{0xFD, 0xE7, 0x25, 0xff}, color.Black},
	{10, 100, "10–100 ms", color.RGBA{0x5E, 0xC9, 0x62, 0xff}, color.Black},
	{100, 1000, "0.1–1 s", color.RGBA{0x21, 0x91, 0x8C, 0xff}, color.White},
	{1000, 10000, "1–10 s", color.RGBA{0x3B, 0x52, 0x8B, 0xff}, color.White},
	{10000, math.Inf(1), "≥ 10 s", color.RGBA{0x44, 0x01, 0x54, 0xff}, color.White},
}

// noP95Fill is a cell that ran but has no p95.
var noP95Fill = color.Gray{0xe4}

// heatCells draws one filled square per cell of a grid whose rows and
// columns are at whole numbers.
type heatCells struct {
	x, y []float64
	fill []color.Color
}

// Plot implements plot.Plotter: each cell leaves a thin white gap to its
// neighbours.
func (h *heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	const half = 0.48
	for i := range h.x {
		x0, x1, y0, y1 := trX(h.x[i]-half), trX(h.x[i]+half), trY(h.y[i]-half), trY(h.y[i]+half)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
		c.FillPolygon(h.fill[i], c.ClipPolygonXY(pts))
	}
}

// swatch is a legend entry's filled square.
type swatch struct{ fill color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(s.fill, pts)
	c.StrokeLines(draw.LineStyle{Color: color.Gray{0x99}, Width: vg.Points(0.5)}, append(pts, pts[0]))
}

// heatmap draws, for kernel, one heatmap per condition of /fast p95 over
// size (rows) x rate (columns), each cell coloured by its decade and
// annotated with its value, named name; nil and the reason when no cell
// has a p95.
func heatmap(sw *sweepDir, kernel, name string) (*report.Drawing, string) {
	conds := sw.condsOf(kernel)
	title := "/fast p95 over response size × read rate, kernel " + kernel
	perPanel := vg.Length(0.9+0.42*float64(len(sw.sizes))) * vg.Inch
	d := report.NewDrawing(name, title, 8*vg.Inch, max(3*vg.Inch, perPanel*vg.Length(len(conds))+0.4*vg.Inch))
	drawn, noP95, partial := 0, 0, 0
	for _, k := range conds {
		panelTitle := k.label() + " clients"
		if len(conds) == 1 {
			panelTitle = title + "\n" + panelTitle
		}
		p, n, none, part, err := heatPanel(sw, panelTitle, sw.of(kernel, k))
		if err != nil {
			return nil, err.Error()
		}
		d.AddPanel(p)
		d.AddSeries(k.label(), n)
		drawn, noP95, partial = drawn+n, noP95+none, partial+part
	}
	if drawn == 0 {
		return nil, "no cell has a /fast p95"
	}
	wmem, rmem := sw.mem(kernel)
	var binLabels []string
	for _, b := range p95Bins {
		binLabels = append(binLabels, b.label)
	}
	caption := "Cell = the cell's /fast p95 as " + sweepFile + " reports it (the median over the cell's ok runs of each " +
		"run's nearest-rank 95th percentile of its /fast latencies), written in ms and coloured by decade: " +
		strings.Join(binLabels, ", ") + ". Rows are response sizes, columns slow read rates. Kernel " + kernel + ": tcp_wmem " +
		cmp.Or(wmem, "not recorded") + ", tcp_rmem " + cmp.Or(rmem, "not recorded") + "."
	if noP95 > 0 {
		caption += fmt.Sprintf(" Grey \"–\": %d cells ran but have no p95 (no ok run, or no /fast answered).", noP95)
	}
	if partial > 0 {
		caption += fmt.Sprintf(" %d cells say how many of their runs were ok, when not all were.", partial)
	}
	d.SetCaption(caption + " Blank: not in " + sweepFile + " (not run).")
	return d, ""
}

// heatPanel is the heatmap of one condition's cells, titled title: n
// cells with a p95, noP95 without, partial with not every run ok.
func heatPanel(sw *sweepDir, title string, cells []Cell) (p *plot.Plot, n, noP95, partial int, err error) {
	mibTexts := func(vs []int64) (out []string) {
		for _, v := range vs {
			out = append(out, report.MiBText(v))
		}
		return out
	}
	p = report.NewPlot(title, "slow read rate (MiB/s)", "response size (MiB)")
	p.NominalX(mibTexts(sw.rates)...)
	p.NominalY(mibTexts(sw.sizes)...)
	squares := &heatCells{}
	var xyl plotter.XYLabels
	var colours []color.Color
	for _, c := range cells {
		x, y := float64(slices.Index(sw.rates, c.RateBps)), float64(slices.Index(sw.sizes, c.SizeBytes))
		label, fill, ink := "–", color.Color(noP95Fill), color.Color(color.Black)
		if c.FastP95MS.Valid {
			b := p95Bins[len(p95Bins)-1]
			if i := slices.IndexFunc(p95Bins, func(b p95Bin) bool { return c.FastP95MS.Value < b.hi }); i >= 0 {
				b = p95Bins[i]
			}
			label, fill, ink = report.Sig(c.FastP95MS.Value).Text, b.fill, b.text
			n++
		} else {
			noP95++
		}
		if c.RunsOK < c.Runs {
			label += fmt.Sprintf("\n%d/%d runs ok", c.RunsOK, c.Runs)
			partial++
		}
		squares.x, squares.y, squares.fill = append(squares.x, x), append(squares.y, y), append(squares.fill, fill)
		xyl.XYs = append(xyl.XYs, plotter.XY{X: x, Y: y})
		xyl.Labels = append(xyl.Labels, label)
		colours = append(colours, ink)
	}
	p.Add(squares)
	if len(xyl.Labels) > 0 { // each cell's label, centred, in its ink
		l, err := plotter.NewLabels(xyl)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font = report.Font(9)
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
			l.TextStyle[i].Color = colours[i]
		}
		p.Add(l)
	}
	for _, b := range p95Bins {
		p.Legend.Add(b.label, swatch{b.fill})
	}
	p.Legend.Add("no p95", swatch{noP95Fill})
	p.Legend.Top, p.Legend.Left = true, false
	nr := float64(len(sw.rates))
	p.X.Min, p.X.Max = -0.5, nr-0.5+0.28*nr // room on the right for the legend, about 1.5 in
	p.Y.Min, p.Y.Max = -0.5, float64(len(sw.sizes))-0.5
	return p, n, noP95, partial, nil
}

// heatmapName is the file name of kernel i's heatmap: named after its
// label, made unique when two labels make the same name.
func heatmapName(kernels []string, i int) string {
	name := func(j int) string {
		if sl := report.Slug(kernels[j]); sl != "" {
			return "buffer-sweep-p95-" + sl
		}
		return fmt.Sprintf("buffer-sweep-p95-kernel-%d", j+1)
	}
	n := name(i)
	for j := range i {
		if name(j) == n {
			return fmt.Sprintf("%s-%d", n, i+1)
		}
	}
	return n
}
