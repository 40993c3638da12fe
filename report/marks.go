package report

import (
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ConditionMarks is a figure of named values per condition, a marker
// series each, on a log axis, a line per condition: only the conditions
// whose every value is above 0 are drawn, or with Partial those with some
// value above 0, each with the marks of its values above 0.
type ConditionMarks struct {
	Name, Title, Caption string
	Axis                 string   // the value axis's label
	Labels               []string // a condition's, one per line
	Series               []BarSeries
	// Partial draws a condition whose values are only partly above 0
	// (partly measured: the others NaN) with the marks of those that
	// are; without it such a condition is left out.
	Partial bool
}

// has says whether s has a value above 0 for condition i.
func (s BarSeries) has(i int) bool { return i < len(s.Values) && s.Values[i] > 0 }

// figure draws m; nil when no condition is drawn: none has every value
// above 0, or with Partial none has any.
func (m *ConditionMarks) figure() *figure {
	var rows []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range m.Labels {
		var vals []float64 // the condition's values above 0
		for _, s := range m.Series {
			if s.has(i) {
				vals = append(vals, s.Values[i])
			}
		}
		if len(vals) == 0 || !m.Partial && len(vals) < len(m.Series) {
			continue
		}
		rows = append(rows, i)
		lo, hi = min(lo, slices.Min(vals)), max(hi, slices.Max(vals))
	}
	if len(rows) == 0 {
		return nil
	}
	labels := make([]string, len(rows))
	for j, i := range rows {
		labels[j] = m.Labels[i]
	}
	f := &figure{name: m.Name, title: m.Title, caption: m.Caption, width: 8 * vg.Inch}
	shapes := []draw.GlyphDrawer{draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	return f.conditionRows(m.Axis, labels, lo, hi, func(p *plot.Plot, ys []float64) error {
		for k, s := range m.Series {
			var xys plotter.XYs
			for j, i := range rows {
				if s.has(i) {
					xys = append(xys, plotter.XY{X: s.Values[i], Y: ys[j]})
				}
			}
			f.addPoints(p, s.Name, Marks(xys, ColorAt(k), shapes[k%len(shapes)]))
		}
		return nil
	})
}

// conditionRows makes f one panel of a row per condition (labels, top
// first) against a value axis labelled axis, log-scaled over lo to hi
// with room on the right for the legend; series draws at the
// rows' ys. nil when draw fails.
func (f *figure) conditionRows(axis string, labels []string, lo, hi float64, series func(p *plot.Plot, ys []float64) error) *figure {
	f.height = RowsHeight(len(labels))
	p := NewPlot(f.title, axis, "condition")
	Grid(p, true, false)
	if err := series(p, ConditionRows(p, labels)); err != nil {
		return nil
	}
	SetLog(&p.X, lo, hi)
	p.X.Max = hi * 6
	f.panels = []*plot.Plot{p}
	return f
}

// addPoints draws s on p, in its legend and in f's series as name.
func (f *figure) addPoints(p *plot.Plot, name string, s *plotter.Scatter) {
	p.Add(s)
	p.Legend.Add(name, s)
	f.addSeries(name, len(s.XYs))
}

// AddMarks adds m to the part; false, and nothing added, when no
// condition is drawn (the caller says what was left out, with Skip).
func (p *Part) AddMarks(m *ConditionMarks) bool { return p.addIf(m.figure()) }
