package report

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ConditionMarks is a figure of named values per condition, a marker
// series each, on a log axis, a line per condition: only the conditions
// whose every value is above 0 are drawn.
type ConditionMarks struct {
	Name, Title, Caption string
	Axis                 string   // the value axis's label
	Labels               []string // a condition's, one per line
	Series               []BarSeries
}

// figure draws m; nil when no condition has every value above 0.
func (m *ConditionMarks) figure() *figure {
	var rows []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range m.Labels {
		ok := true
		for _, s := range m.Series {
			ok = ok && i < len(s.Values) && s.Values[i] > 0
		}
		if !ok || len(m.Series) == 0 {
			continue
		}
		rows = append(rows, i)
		for _, s := range m.Series {
			lo, hi = math.Min(lo, s.Values[i]), math.Max(hi, s.Values[i])
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: m.Name, title: m.Title, caption: m.Caption, width: 8 * vg.Inch, height: RowsHeight(len(rows))}
	p := NewPlot(f.title, m.Axis, "condition")
	Grid(p, true, false)
	labels := make([]string, len(rows))
	for j, i := range rows {
		labels[j] = m.Labels[i]
	}
	ys := ConditionRows(p, labels)
	shapes := []draw.GlyphDrawer{draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	for k, s := range m.Series {
		var xys plotter.XYs
		for j, i := range rows {
			xys = append(xys, plotter.XY{X: s.Values[i], Y: ys[j]})
		}
		mk := Marks(xys, ColorAt(k), shapes[k%len(shapes)])
		p.Add(mk)
		p.Legend.Add(s.Name, mk)
		f.addSeries(s.Name, len(mk.XYs))
	}
	SetLog(&p.X, lo, hi)
	p.X.Max = hi * 6
	f.panels = []*plot.Plot{p}
	return f
}

// AddMarks adds m to the part; false, and nothing added, when no
// condition has every value above 0 (the caller says what was left out,
// with Skip).
func (p *Part) AddMarks(m *ConditionMarks) bool {
	f := m.figure()
	if f != nil {
		p.s.addFigure(f)
	}
	return f != nil
}
