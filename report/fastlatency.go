package report

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// LatencyRow is one condition of a /fast latency figure, in ms: its p95
// (the median over its ok runs, and P95Min to P95Max, their range) and its
// p50.
type LatencyRow struct {
	Label                    string
	P95, P95Min, P95Max, P50 float64
}

// AddFastLatency adds to the part a figure of each row's /fast p95 (point
// and range) and p50 on a log axis, a line per condition, with caption;
// a note instead when there is no row.
func (p *Part) AddFastLatency(name, title, caption string, rows []LatencyRow) {
	if !p.addIf(fastLatencyFigure(name, title, rows, caption)) {
		p.Skip("%s: no condition has an ok run with /fast measured; no figure.", title)
	}
}

// fastLatencyFigure draws each row's p95 (point and range) and p50 on a log
// axis, a line per condition; nil when there is no row.
func fastLatencyFigure(name, title string, rows []LatencyRow, caption string) *figure {
	if len(rows) == 0 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	labels := make([]string, len(rows))
	var mid, low, high []float64
	for i, r := range rows {
		labels[i] = r.Label
		mid, low, high = append(mid, r.P95), append(low, r.P95Min), append(high, r.P95Max)
		lo, hi = math.Min(lo, r.P50), math.Max(hi, r.P95Max)
	}
	f := &figure{name: name, title: title, caption: caption, width: 9 * vg.Inch}
	return f.conditionRows("/fast latency (ms, log scale)", labels, lo, hi, func(p *plot.Plot, ys []float64) error {
		bars, pts, err := Ranges(ys, mid, low, high, ColorAt(0))
		if err != nil {
			return err
		}
		p.Add(bars)
		f.addPoints(p, "p95", pts)
		var xys plotter.XYs
		for i, r := range rows {
			xys = append(xys, plotter.XY{X: r.P50, Y: ys[i]})
		}
		f.addPoints(p, "p50", Marks(xys, ColorAt(1), draw.BoxGlyph{}))
		return nil
	})
}

// LatencyOf is the /fast latency figure's row of the condition labelled
// label; false when its p95 or p50 was not measured (no ok run).
func LatencyOf(label string, f recorder.FastOver) (LatencyRow, bool) {
	r := LatencyRow{label, f.P95MS.Value, f.P95MinMS.Value, f.P95MaxMS.Value, f.P50MS.Value}
	ok := f.P95MS.Valid && f.P95MinMS.Valid && f.P95MaxMS.Valid && f.P50MS.Valid
	return r, ok && !math.IsNaN(r.P95) && !math.IsNaN(r.P50)
}

// AddFastLatencyOf adds the /fast latency figure of conds, each named by
// label and measured by its FastOver (fast): conditions without an ok run
// are left out, and said so in the caption.
func AddFastLatencyOf[S any](p *Part, name, title string, conds []S, label func(*S) string, fast func(*S) *recorder.FastOver) {
	var rows []LatencyRow
	for i := range conds {
		if r, ok := LatencyOf(label(&conds[i]), *fast(&conds[i])); ok {
			rows = append(rows, r)
		}
	}
	p.AddFastLatency(name, title, "/fast p95 per condition (the median over its ok runs, the bar their range) and p50 (the median of "+
		"the runs' p50), in ms on a log axis; conditions without an ok run are left out.", rows)
}
