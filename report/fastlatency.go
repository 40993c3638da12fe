package report

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// latencyRow is one condition of a /fast latency figure: its p95 (mid, the
// median over its ok runs, and lo to hi, their range) and its p50, in ms.
type latencyRow struct {
	label            string
	mid, lo, hi, p50 float64
}

// fastLatencyFigure draws each row's p95 (point and range) and p50 on a log
// axis, a line per condition; nil when there is no row.
func fastLatencyFigure(name, title string, width vg.Length, rows []latencyRow, caption string) *figure {
	if len(rows) == 0 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	labels := make([]string, len(rows))
	var mid, low, high []float64
	for i, r := range rows {
		labels[i] = r.label
		mid, low, high = append(mid, r.mid), append(low, r.lo), append(high, r.hi)
		lo, hi = math.Min(lo, r.p50), math.Max(hi, r.hi)
	}
	f := &figure{name: name, title: title, width: width, height: rowsHeight(len(rows))}
	p := newPlot(f.title, "/fast latency (ms, log scale)", "condition")
	grid(p, true, false)
	ys := conditionRows(p, labels)
	iv := newIntervals(ys, mid, low, high)
	bars, err := plotter.NewXErrorBars(iv)
	if err != nil {
		return nil
	}
	bars.LineStyle.Color, bars.LineStyle.Width, bars.CapWidth = colorAt(0), vg.Points(1.5), vg.Points(6)
	pts := scatter(iv.XYs, colorAt(0), vg.Points(4))
	p.Add(bars, pts)
	p.Legend.Add("p95", pts)
	f.addSeries("p95", len(pts.XYs))
	var xys plotter.XYs
	for i, r := range rows {
		xys = append(xys, plotter.XY{X: r.p50, Y: ys[i]})
	}
	m := marks(xys, colorAt(1), draw.BoxGlyph{})
	p.Add(m)
	p.Legend.Add("p50", m)
	f.addSeries("p50", len(m.XYs))
	setLog(&p.X, lo, hi)
	p.X.Max = hi * 6
	f.panels = []*plot.Plot{p}
	f.caption = caption
	return f
}
