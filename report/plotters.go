package report

import (
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bars draws one bar per category from zero to its value, centred on the
// category's position with a thickness in data units, so that points can
// be drawn over a bar at known data coordinates (plotter.BarChart sizes
// bars in points instead).
type Bars struct {
	pos, val   []float64      // category position and value; a NaN value draws no bar
	base       []float64      // where each bar starts: 0, or the bars below (stacked)
	thickness  float64        // in data units along the category axis
	horizontal bool           // values along X, categories along Y
	Fill       color.Color    // inside the bars
	Line       draw.LineStyle // their outline
}

var (
	_ plot.Plotter     = (*Bars)(nil)
	_ plot.DataRanger  = (*Bars)(nil)
	_ plot.Thumbnailer = (*Bars)(nil)
)

// NewBars draws a bar at each pos from zero to val (NaN: none), thickness
// wide in data units, along X when horizontal, filled with a lighter c.
func NewBars(pos, val []float64, thickness float64, horizontal bool, c color.Color) *Bars {
	return &Bars{pos: pos, val: val, base: make([]float64, len(pos)), thickness: thickness, horizontal: horizontal, Fill: lighter(c),
		Line: draw.LineStyle{Color: c, Width: vg.Points(0.75)}}
}

// Drawn returns the number of bars drawn.
func (b *Bars) Drawn() int {
	n := 0
	for _, v := range b.val {
		if !math.IsNaN(v) {
			n++
		}
	}
	return n
}

// Plot implements plot.Plotter.
func (b *Bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.val {
		if math.IsNaN(v) {
			continue
		}
		lo, hi := b.pos[i]-b.thickness/2, b.pos[i]+b.thickness/2
		start := b.base[i]
		var x0, x1, y0, y1 vg.Length
		if b.horizontal {
			x0, x1, y0, y1 = trX(start), trX(start+v), trY(lo), trY(hi)
		} else {
			x0, x1, y0, y1 = trX(lo), trX(hi), trY(start), trY(start+v)
		}
		pts := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
		c.FillPolygon(b.Fill, c.ClipPolygonXY(pts))
		c.StrokeLines(b.Line, c.ClipLinesXY(append(pts, pts[0]))...)
	}
}

// DataRange implements plot.DataRanger: the categories' extent and the
// values' extent including zero.
func (b *Bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	cmin, cmax := math.Inf(1), math.Inf(-1)
	vmin, vmax := 0.0, 0.0
	for i, v := range b.val {
		if math.IsNaN(v) {
			continue
		}
		cmin, cmax = math.Min(cmin, b.pos[i]-b.thickness/2), math.Max(cmax, b.pos[i]+b.thickness/2)
		start := b.base[i]
		vmin, vmax = math.Min(vmin, math.Min(start, start+v)), math.Max(vmax, math.Max(start, start+v))
	}
	if b.horizontal {
		return vmin, vmax, cmin, cmax
	}
	return cmin, cmax, vmin, vmax
}

// Thumbnail implements plot.Thumbnailer.
func (b *Bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	}
	c.FillPolygon(b.Fill, pts)
	c.StrokeLines(b.Line, append(pts, pts[0]))
}

// intervals are points with a low and a high value each, for
// plotter.XErrorBars (whose errors are relative to the point).
type intervals struct {
	plotter.XYs
	plotter.XErrors
}

// Ranges draws, at each y[i], a point at mid[i] and a line from lo[i] to
// hi[i] (a median and its range over runs) in colour c: the lines and the
// points, for the caller to add to its plot and its legend.
func Ranges(y, mid, lo, hi []float64, c color.Color) (*plotter.XErrorBars, *plotter.Scatter, error) {
	iv := intervals{XYs: make(plotter.XYs, len(y)), XErrors: make(plotter.XErrors, len(y))}
	for i := range y { // the intervals [lo[i], hi[i]] around the points (mid[i], y[i])
		iv.XYs[i] = plotter.XY{X: mid[i], Y: y[i]}
		iv.XErrors[i].Low, iv.XErrors[i].High = mid[i]-lo[i], hi[i]-mid[i]
	}
	bars, err := plotter.NewXErrorBars(iv)
	if err != nil {
		return nil, nil, err
	}
	bars.LineStyle.Color, bars.LineStyle.Width, bars.CapWidth = c, vg.Points(1.5), vg.Points(6)
	return bars, Scatter(iv.XYs, c, vg.Points(4)), nil
}

// finite returns the points of xys whose coordinates are both finite.
func finite(xys plotter.XYs) plotter.XYs {
	return slices.DeleteFunc(slices.Clone(xys), func(p plotter.XY) bool {
		return math.IsNaN(p.X) || math.IsInf(p.X, 0) || math.IsNaN(p.Y) || math.IsInf(p.Y, 0)
	})
}

// must is v, for a gonum constructor given data that cannot fail it
// (finite points): an error is report's bug.
func must[T any](v T, err error) T {
	if err != nil {
		panic("report: " + err.Error())
	}
	return v
}

// Scatter returns the finite points of xys drawn as filled circles of
// colour c. The tests count circles in the SVG, so in every figure circles
// are data points and nothing else is drawn with arcs.
func Scatter(xys plotter.XYs, c color.Color, radius vg.Length) *plotter.Scatter {
	s := must(plotter.NewScatter(finite(xys)))
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: radius, Shape: draw.CircleGlyph{}}
	return s
}

// Marks returns points drawn with shape, which must not be a circle
// (circles are reserved for scatter).
func Marks(xys plotter.XYs, c color.Color, shape draw.GlyphDrawer) *plotter.Scatter {
	s := Scatter(xys, c, vg.Points(3.5))
	s.GlyphStyle.Shape = shape
	return s
}

// Line returns a polyline through the finite points of xys in colour c,
// for a figure drawn elsewhere (Drawing).
func Line(xys plotter.XYs, c color.Color) *plotter.Line {
	l := must(plotter.NewLine(finite(xys)))
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1.25)}
	return l
}
