package report

import (
	"image/color"
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
				xys = append(xys, plotter.XY{X: s.Values[i], Y: ys[j]})
			}
			f.addMarks(p, s.Name, xys, ColorAt(k), shapes[k%len(shapes)])
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

// addMarks draws xys with shape in colour c (Marks) on p, in its legend
// and in f's series as name.
func (f *figure) addMarks(p *plot.Plot, name string, xys plotter.XYs, c color.Color, shape draw.GlyphDrawer) {
	m := Marks(xys, c, shape)
	p.Add(m)
	p.Legend.Add(name, m)
	f.addSeries(name, len(m.XYs))
}

// AddMarks adds m to the part; false, and nothing added, when no
// condition has every value above 0 (the caller says what was left out,
// with Skip).
func (p *Part) AddMarks(m *ConditionMarks) bool { return p.s.addIf(m.figure()) }
