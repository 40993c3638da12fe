package report

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Drawing is a figure an experiment's package draws itself in report's
// style (NewPlot, Grid, ConditionRows, RowsHeight, SetLog, ColorAt,
// Scatter, Marks, Line, Ranges, NewBars): one or more panels stacked
// vertically, the series it drew and their point counts, and a caption.
type Drawing struct{ f figure }

// NewDrawing is an empty figure named name (its files' names), titled
// title, of width by height.
func NewDrawing(name, title string, width, height vg.Length) *Drawing {
	return &Drawing{figure{name: name, title: title, width: width, height: height}}
}

// Title is the drawing's title, for its panels (NewPlot).
func (d *Drawing) Title() string { return d.f.title }

// AddPanel stacks p below the drawing's panels.
func (d *Drawing) AddPanel(p *plot.Plot) { d.f.panels = append(d.f.panels, p) }

// Panels are the drawing's panels, top first.
func (d *Drawing) Panels() []*plot.Plot { return d.f.panels }

// AddSeries records a series drawn with n points or bars (what
// report.Figure's Series and Points say).
func (d *Drawing) AddSeries(name string, n int) { d.f.addSeries(name, n) }

// SetCaption sets what the report says under the figure.
func (d *Drawing) SetCaption(caption string) { d.f.caption = caption }

// Caption is what the report says under the figure.
func (d *Drawing) Caption() string { return d.f.caption }

// AddDrawing adds d to the part.
func (p *Part) AddDrawing(d *Drawing) { p.add(block{fig: &d.f}) }

// ConditionRows sets p's Y axis to one row per condition, the first at the
// top, and returns each condition's Y position.
func ConditionRows(p *plot.Plot, labels []string) []float64 {
	n := len(labels)
	ys := make([]float64, n)
	names := make([]string, n)
	for i, l := range labels {
		ys[i] = float64(n - 1 - i)
		names[n-1-i] = l
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	return ys
}

// RowsHeight is the height of a figure with n condition rows.
func RowsHeight(n int) vg.Length {
	return max(3*vg.Inch, vg.Length(1.4+0.32*float64(n))*vg.Inch)
}
