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

func binOf(v float64) p95Bin {
	for _, b := range p95Bins {
		if v < b.hi {
			return b
		}
	}
	return p95Bins[len(p95Bins)-1]
}

// heatCells draws one filled square per cell of a grid whose rows and
// columns are at whole numbers.
type heatCells struct {
	x, y []float64
	fill []color.Color
}

var _ plot.Plotter = (*heatCells)(nil)

func (h *heatCells) add(x, y float64, fill color.Color) {
	h.x, h.y, h.fill = append(h.x, x), append(h.y, y), append(h.fill, fill)
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

// sweepHeatmap draws, for kernel, one heatmap per condition of /fast p95
// over size (rows) x rate (columns), each cell coloured by its decade and
// annotated with its value; nil and the reason when no cell has a p95.
func sweepHeatmap(sw *sweep, kernel, name string) (*figure, string) {
	keys := sw.keysOf(kernel)
	sizeRow := map[int64]float64{}
	var sizeLabels, rateLabels []string
	for i, s := range sw.sizes {
		sizeRow[s] = float64(i)
		sizeLabels = append(sizeLabels, MiBText(s))
	}
	rateCol := map[int64]float64{}
	for i, r := range sw.rates {
		rateCol[r] = float64(i)
		rateLabels = append(rateLabels, MiBText(r))
	}
	f := &figure{name: name, title: "/fast p95 over response size × read rate, kernel " + kernel, width: 8 * vg.Inch}
	drawn, noP95, partial := 0, 0, 0
	for _, k := range keys {
		title := fmt.Sprintf("%s, %s, %d slow clients", k.route, k.server, k.slow)
		if len(keys) == 1 {
			title = f.title + "\n" + title
		}
		p := NewPlot(title, "slow read rate (MiB/s)", "response size (MiB)")
		p.NominalX(rateLabels...)
		p.NominalY(sizeLabels...)
		cells := &heatCells{}
		var xyl plotter.XYLabels
		var colours []color.Color
		n := 0
		for _, c := range sw.of(kernel, k) {
			x, y := rateCol[c.RateBps], sizeRow[c.SizeBytes]
			label, fill, ink := "–", color.Color(noP95Fill), color.Color(color.Black)
			if c.FastP95MS.Valid {
				b := binOf(c.FastP95MS.Value)
				label, fill, ink = Sig(c.FastP95MS.Value).Text, b.fill, b.text
				n++
			} else {
				noP95++
			}
			if c.RunsOK < c.Runs {
				label += fmt.Sprintf("\n%d/%d runs ok", c.RunsOK, c.Runs)
				partial++
			}
			cells.add(x, y, fill)
			xyl.XYs = append(xyl.XYs, plotter.XY{X: x, Y: y})
			xyl.Labels = append(xyl.Labels, label)
			colours = append(colours, ink)
		}
		p.Add(cells)
		if err := addHeatLabels(p, xyl, colours); err != nil {
			return nil, err.Error()
		}
		addHeatLegend(p)
		nr := float64(len(sw.rates))
		p.X.Min, p.X.Max = -0.5, nr-0.5+0.28*nr // room on the right for the legend, about 1.5 in
		p.Y.Min, p.Y.Max = -0.5, float64(len(sw.sizes))-0.5
		f.panels = append(f.panels, p)
		f.addSeries(k.label(), n)
		drawn += n
	}
	if drawn == 0 {
		return nil, "no cell has a /fast p95"
	}
	perPanel := vg.Length(0.9+0.42*float64(len(sw.sizes))) * vg.Inch
	f.height = max(3*vg.Inch, perPanel*vg.Length(len(f.panels))+0.4*vg.Inch)
	wmem, rmem := kernelMem(sw, kernel)
	f.caption = "Cell = the cell's /fast p95 as " + sweepFile + " reports it (the median over the cell's ok runs of each " +
		"run's nearest-rank 95th percentile of its /fast latencies), written in ms and coloured by decade: " +
		binLabels() + ". Rows are response sizes, columns slow read rates. Kernel " + kernel + ": tcp_wmem " + orNotRecorded(wmem) + ", tcp_rmem " + orNotRecorded(rmem) + "."
	if noP95 > 0 {
		f.caption += fmt.Sprintf(" Grey \"–\": %d cells ran but have no p95 (no ok run, or no /fast answered).", noP95)
	}
	if partial > 0 {
		f.caption += fmt.Sprintf(" %d cells say how many of their runs were ok, when not all were.", partial)
	}
	f.caption += " Blank: not in " + sweepFile + " (not run)."
	return f, ""
}

// addHeatLabels writes each cell's label, centred, in its ink.
func addHeatLabels(p *plot.Plot, xyl plotter.XYLabels, colours []color.Color) error {
	if len(xyl.Labels) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(xyl)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(sans, 9)
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		l.TextStyle[i].Color = colours[i]
	}
	p.Add(l)
	return nil
}

// addHeatLegend adds the p95 decades and "no p95" to a heatmap's legend,
// top right.
func addHeatLegend(p *plot.Plot) {
	for _, b := range p95Bins {
		p.Legend.Add(b.label, swatch{b.fill})
	}
	p.Legend.Add("no p95", swatch{noP95Fill})
	p.Legend.Top, p.Legend.Left = true, false
}

func binLabels() string {
	var ls []string
	for _, b := range p95Bins {
		ls = append(ls, b.label)
	}
	return strings.Join(ls, ", ")
}

// kernelMem returns kernel's tcp_wmem and tcp_rmem as sweep.csv has them.
func kernelMem(sw *sweep, kernel string) (wmem, rmem string) {
	for _, c := range sw.cells {
		if c.Kernel == kernel {
			if wmem == "" {
				wmem = c.TCPWmem
			}
			if rmem == "" {
				rmem = c.TCPRmem
			}
		}
	}
	return wmem, rmem
}

// routeShapes are the prediction figure's markers, by route: filled for
// the cells with size > predicted capacity, hollow for the others.
var routeShapes = []struct{ filled, hollow draw.GlyphDrawer }{
	{draw.CircleGlyph{}, draw.RingGlyph{}},
	{draw.PyramidGlyph{}, draw.TriangleGlyph{}},
	{draw.BoxGlyph{}, draw.SquareGlyph{}},
	{draw.CrossGlyph{}, draw.PlusGlyph{}},
}

// predictionFigure draws each cell's measured app send time against the
// model's prediction, max(0, size - capacity) / rate with the capacity
// predicted from configuration: full colour where size > that capacity,
// light where the model says the path holds the whole response; nil and
// the reason when no cell has both.
func predictionFigure(sw *sweep) (*figure, string) {
	var routes []string
	above, within := map[string]plotter.XYs{}, map[string]plotter.XYs{}
	var left []string
	hi := 0.0
	for _, c := range sw.cells {
		if !c.AppSendMeasuredS.Valid || !c.AppSendPredictedS.Valid || !c.CapacityPredictedBytes.Valid {
			left = append(left, fmt.Sprintf("%s %s at %s (kernel %s)", c.Route, SizeText(c.SizeBytes), rateText(c.RateBps), c.Kernel))
			continue
		}
		if _, seen := above[c.Route]; !seen {
			routes = append(routes, c.Route)
			above[c.Route] = plotter.XYs{}
		}
		xy := plotter.XY{X: c.AppSendPredictedS.Value, Y: c.AppSendMeasuredS.Value}
		if float64(c.SizeBytes) > c.CapacityPredictedBytes.Value {
			above[c.Route] = append(above[c.Route], xy)
		} else {
			within[c.Route] = append(within[c.Route], xy)
		}
		hi = math.Max(hi, math.Max(xy.X, xy.Y))
	}
	if len(routes) == 0 {
		return nil, "no cell has both a measured and a predicted app send time"
	}
	f := &figure{name: "buffer-sweep-send-predicted", title: "Measured against predicted app send time per cell",
		width: 8 * vg.Inch, height: 6 * vg.Inch}
	p := NewPlot(f.title, "predicted app_send = max(0, size − predicted capacity) / rate (s)", "measured app_send (s)")
	Grid(p, true, true)
	hi = math.Max(hi, 0.1) * 1.08
	addPredictionReferences(p, hi)
	// Routes in report order, so their colours match from run to run.
	slices.SortStableFunc(routes, func(a, b string) int {
		return cmp.Or(cmp.Compare(routeOrder(a), routeOrder(b)), strings.Compare(a, b))
	})
	nWithin := 0
	for i, route := range routes {
		shape := routeShapes[i%len(routeShapes)]
		mk := func(xys plotter.XYs, g draw.GlyphDrawer) *plotter.Scatter {
			s := Scatter(xys, ColorAt(i), vg.Points(3.5))
			s.GlyphStyle.Shape = g
			return s
		}
		if xys := above[route]; len(xys) > 0 {
			s := mk(xys, shape.filled)
			p.Add(s)
			p.Legend.Add(route+", size > predicted capacity", s)
			f.addSeries(route+", size > predicted capacity", len(s.XYs))
		}
		if xys := within[route]; len(xys) > 0 {
			s := mk(xys, shape.hollow)
			p.Add(s)
			p.Legend.Add(route+", size ≤ predicted capacity", s)
			f.addSeries(route+", size ≤ predicted capacity", len(s.XYs))
			nWithin += len(xys)
		}
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, hi, 0, hi
	p.Legend.Left = true
	f.panels = []*plot.Plot{p}
	f.caption = "Point = one cell of " + sweepFile + ", every kernel setting. x = the predicted send time, " +
		"max(0, size − C) / R, with C the path's capacity predicted before the run from configuration only " +
		"(capacity_predicted_bytes: the app's send buffer as the kernel sizes it, the proxy's buffers and sockets on " +
		"proxied routes, the client's receive buffer) and R the slow read rate; y = the measured app send time " +
		"(app_send_measured_s: the app's time to hand the whole response to its socket, from its send log), median over " +
		"the cell's downloads. Colour and marker: route. Filled: size > C, the cells the prediction says hold the app; " +
		"hollow: size ≤ C (prediction 0). Solid line: measured = predicted; dashed: ±20%."
	if nWithin == 0 {
		f.caption += " No cell has size ≤ C."
	}
	if len(left) > 0 {
		f.caption += fmt.Sprintf(" Not drawn, no observed or no predicted send time: %s.", strings.Join(left, "; "))
	}
	return f, ""
}

// addPredictionReferences draws measured = predicted (solid) and ±20%
// (dashed) across a plot whose axes run from 0 to hi.
func addPredictionReferences(p *plot.Plot, hi float64) {
	// ref is the line y = slope * x across the plot.
	ref := func(slope float64, dashed bool) *plotter.Line {
		end := math.Min(hi, hi/slope)
		l := line(plotter.XYs{{X: 0, Y: 0}, {X: end, Y: slope * end}}, color.Gray{0x66})
		l.LineStyle.Width = vg.Points(0.75)
		if dashed {
			l.LineStyle.Color = color.Gray{0xaa}
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		return l
	}
	diag := ref(1, false)
	plus, minus := ref(1.2, true), ref(0.8, true)
	p.Add(diag, plus, minus)
	p.Legend.Add("measured = predicted", diag)
	p.Legend.Add("±20%", plus)
}
