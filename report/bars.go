package report

import (
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// BarSeries is one series of a grouped bar figure: its legend name and a
// value per category (NaN: no bar, the value was not measured).
type BarSeries struct {
	Name   string
	Values []float64
}

// GroupedBars is a figure of bars grouped by category, a colour per
// series, on a linear axis from 0.
type GroupedBars struct {
	Name, Title, Caption string
	XLabel, YLabel       string
	Categories           []string // may hold line breaks
	Series               []BarSeries
	ValueLabels          bool      // write each bar's value above it
	Stacked              bool      // one bar per category, 0.6 wide, the series' parts stacked in order
	Width, Height        vg.Length // 0: 9 by 5 inches
}

// figure draws g; nil when no bar is above 0.
func (g *GroupedBars) figure() *figure {
	n := len(g.Categories)
	if n == 0 || len(g.Series) == 0 {
		return nil
	}
	f := &figure{name: g.Name, title: g.Title, caption: g.Caption, width: g.Width, height: g.Height}
	if f.width == 0 {
		f.width, f.height = 9*vg.Inch, 5*vg.Inch
	}
	p := NewPlot(f.title, g.XLabel, g.YLabel)
	Grid(p, false, true)
	p.NominalX(g.Categories...)
	width := 0.8 / float64(len(g.Series))
	spread, thickness := width, width*0.9 // between a category's series' bars; each bar's
	if g.Stacked {
		spread, thickness = 0, 0.6
	}
	top := make([]float64, n) // stacked: where a category's next bar starts
	hi := 0.0
	for i, s := range g.Series {
		pos := make([]float64, n)
		val := make([]float64, n)
		base := slices.Clone(top)
		for j := range n {
			pos[j] = float64(j) + (float64(i)-float64(len(g.Series)-1)/2)*spread
			val[j] = math.NaN()
			if j < len(s.Values) && !math.IsNaN(s.Values[j]) {
				val[j] = s.Values[j]
				if g.Stacked {
					top[j] += val[j]
				}
				hi = math.Max(hi, base[j]+val[j])
			}
		}
		b := NewBars(pos, val, thickness, false, ColorAt(i))
		b.base = base
		p.Add(b)
		if g.ValueLabels {
			p.Add(barLabels(pos, val))
		}
		p.Legend.Add(s.Name, b)
		f.addSeries(s.Name, b.Drawn())
	}
	if !(hi > 0) {
		return nil
	}
	p.X.Min, p.X.Max = -0.6, float64(n)-0.4
	p.Y.Min, p.Y.Max = 0, hi*1.35 // room for the legend
	p.Legend.Left = true
	f.panels = []*plot.Plot{p}
	return f
}

// barLabels writes each bar's value above it, so that bars too short to
// see on a shared axis can still be read.
func barLabels(pos, val []float64) *plotter.Labels {
	var xyl plotter.XYLabels
	for i, v := range val {
		if math.IsNaN(v) {
			continue
		}
		xyl.XYs = append(xyl.XYs, plotter.XY{X: pos[i], Y: v})
		xyl.Labels = append(xyl.Labels, Sig(v).Text)
	}
	l := must(plotter.NewLabels(xyl))
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(sans, 7)
		l.TextStyle[i].XAlign = draw.XCenter
	}
	l.Offset = vg.Point{Y: vg.Points(2)}
	return l
}

// AddBars adds g to the part; false, and nothing added, when no bar is
// above 0 (the caller says what was left out, with Skip).
func (p *Part) AddBars(g *GroupedBars) bool { return p.addIf(g.figure()) }

// ValueOf is m's value times scale for a BarSeries, NaN (no bar) when it
// was not measured.
func ValueOf(m recorder.Maybe, scale float64) float64 {
	if !m.Valid {
		return math.NaN()
	}
	return m.Value * scale
}
