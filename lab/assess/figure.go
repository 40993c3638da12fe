package assess

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/report"
)

// assessPoint is one level of a probe as the level figure draws it: at
// its /fast p95, or, when /fast requests failed there, at the level's
// /fast timeout (the ceiling when not recorded) with failed "N/M failed".
type assessPoint struct {
	plotter.XY
	failed string
	// okP95 is, at a level where some requests failed and others
	// succeeded, the p95 of those that succeeded; 0 otherwise.
	okP95 float64
}

// assessPoints are the levels of v the figure draws, in order: every
// level that measured /fast (a shard other than 0 measures none).
// ceiling stands for the timeout of a failed level that does not record
// it; atCeiling says whether one was drawn there.
func assessPoints(v Verdict, ceiling float64) (pts []assessPoint, atCeiling bool) {
	for _, lv := range v.Levels {
		x := float64(lv.Clients)
		switch {
		case lv.FastFail > 0:
			pt := assessPoint{XY: plotter.XY{X: x, Y: lv.FastTimeoutMS}, failed: fmt.Sprintf("%d/%d failed", lv.FastFail, lv.FastSent)}
			if !(pt.Y > 0) {
				pt.Y, atCeiling = ceiling, true
			}
			if lv.FastOK > 0 && lv.P95MS > 0 {
				pt.okP95 = lv.P95MS
			}
			pts = append(pts, pt)
		case lv.FastOK > 0 && lv.P95MS > 0:
			pts = append(pts, assessPoint{XY: plotter.XY{X: x, Y: lv.P95MS}})
		}
	}
	return pts, atCeiling
}

// assessThreshold is Threshold of v's baseline p95, in ms; 0 without a
// baseline.
func assessThreshold(v Verdict) float64 {
	if b := v.BaselineP95MS; b > 0 {
		return math.Max(Factor*b, b+msf(Margin))
	}
	return 0
}

// assessRange is the lowest and highest value the figure draws other
// than the ceiling (p95s, baselines, thresholds and recorded timeouts;
// 1 ms when there is none), and how many levels it draws.
func assessRange(a Assessment) (lo, hi float64, levels int) {
	lo = math.Inf(1)
	add := func(y float64) {
		if y > 0 {
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	for _, v := range a.Verdicts {
		pts, _ := assessPoints(v, 0)
		if len(pts) == 0 {
			continue
		}
		levels += len(pts)
		add(v.BaselineP95MS)
		add(assessThreshold(v))
		for _, pt := range pts {
			add(pt.Y)
			add(pt.okP95)
		}
	}
	if !(hi > 0) {
		lo, hi = 1, 1
	}
	return lo, hi, levels
}

// levelFigure draws each probe's /fast p95 at each level it measured,
// over the clients on a log scale, with the degradation line of its
// baseline; a level where /fast requests failed is a cross at the
// level's /fast timeout, labelled with how many, so each probe's line
// ends where it degraded. Nil when no level measured /fast.
func levelFigure(a Assessment) *report.Drawing {
	lo, hi, levels := assessRange(a)
	if levels == 0 {
		return nil
	}
	// Twice the highest value drawn: failed levels without a recorded
	// timeout sit above everything measured.
	ceiling := 2 * hi
	const height = 4.5 * vg.Inch
	d := report.NewDrawing("assess-levels", "/fast p95 at each level of each probe", 8*vg.Inch, height)
	caption := "Each probe's /fast p95 (nearest rank, of the requests that succeeded) with 1, 2, 4, ... slow clients " +
		"in place. A cross is a level where /fast requests failed, labelled with how many of those sent; it is drawn at the " +
		"level's /fast timeout (fast_timeout_ms in " + File + ": the most a request was given), and a hollow " +
		"mark below a cross is the p95 of the requests there that succeeded. The dashed line of a probe's colour is where it " +
		"counts as degraded: over 10 times its baseline p95 and over the baseline plus 500 ms."
	p := report.NewPlot(d.Title(), "slow clients of the probe", "/fast p95 (ms)")
	p.Legend.Left = true // a probe's line rises to the right
	report.Grid(p, true, true)
	maxClients, anyCeiling, anyFailed, rows := 1, false, false, 0
	var notes []failNote
	for i, v := range a.Verdicts {
		pts, atCeiling := assessPoints(v, ceiling)
		if len(pts) == 0 {
			continue
		}
		anyCeiling = anyCeiling || atCeiling
		maxClients = max(maxClients, int(pts[len(pts)-1].X))
		anyFailed = addAssessProbe(p, v, pts, report.ColorAt(i), &notes) || anyFailed
		d.AddSeries(v.Probe, len(pts))
		rows++
	}
	addFailNotes(p, notes)
	if anyFailed {
		rows++
		p.Legend.Add("/fast failed (N of M sent)", report.Marks(plotter.XYs{{}}, color.Black, failGlyph{}))
	}
	if anyCeiling {
		rows++
		hi = ceiling
		ln := report.Line(plotter.XYs{{X: 1, Y: ceiling}, {X: float64(maxClients), Y: ceiling}}, color.Gray{0x88})
		ln.LineStyle.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(ln)
		p.Legend.Add("failed, timeout not recorded: at a ceiling", ln)
		caption += fmt.Sprintf(" Where %s does not record a failed level's timeout (written before fast_timeout_ms), "+
			"its cross is drawn on the dotted line at %s ms, twice the highest value drawn: a ceiling, not a measurement.",
			File, report.Sig(ceiling).Text)
	}
	report.SetLog(&p.X, 1, float64(maxClients))
	p.X.Tick.Marker = levelTicks{}
	report.SetLog(&p.Y, lo, hi)
	legendRoom(&p.Y, rows, height)
	d.AddPanel(p)
	d.SetCaption(caption)
	return d
}

// legendRoom raises the top of the log axis a, in a figure height tall,
// so that a legend of rows entries at the top stays clear of the data.
func legendRoom(a *plot.Axis, rows int, height vg.Length) {
	area := height.Points() - 90 // the title, axis labels and ticks
	q := math.Min(float64(rows)*12/area, 0.5)
	a.Max *= math.Pow(a.Max/a.Min, q/(1-q))
}

// addAssessProbe draws one probe's levels and degradation line in c,
// adding the labels of its failed levels to notes; it reports whether a
// level failed.
func addAssessProbe(p *plot.Plot, v Verdict, pts []assessPoint, c color.Color, notes *[]failNote) bool {
	var all, ok, failed, okP95 plotter.XYs
	for _, pt := range pts {
		all = append(all, pt.XY)
		switch {
		case pt.failed == "":
			ok = append(ok, pt.XY)
		default:
			failed = append(failed, pt.XY)
			*notes = append(*notes, failNote{pt.XY, pt.failed, c})
			if pt.okP95 > 0 {
				okP95 = append(okP95, plotter.XY{X: pt.X, Y: pt.okP95})
			}
		}
	}
	ln := report.Line(all, c)
	p.Add(ln)
	if len(ok) > 0 {
		m := report.Marks(ok, c, draw.CircleGlyph{})
		p.Add(m)
		p.Legend.Add(v.Probe, ln, m)
	} else {
		p.Legend.Add(v.Probe, ln)
	}
	if len(okP95) > 0 {
		p.Add(report.Marks(okP95, c, draw.RingGlyph{}))
	}
	if len(failed) > 0 {
		p.Add(report.Marks(failed, c, failGlyph{}))
	}
	if th := assessThreshold(v); th > 0 {
		dl := report.Line(plotter.XYs{{X: 1, Y: th}, {X: float64(max(v.Tried, 1)), Y: th}}, c)
		dl.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(dl)
	}
	return len(failed) > 0
}

// failNote is the label of a failed level: "N/M failed" in the probe's
// colour, beside its cross.
type failNote struct {
	at   plotter.XY
	text string
	c    color.Color
}

// addFailNotes labels each failed level to the right of its cross; a
// label near an earlier one (probes that failed at the same level, at
// about the same timeout) goes a line above it, so both stay legible.
func addFailNotes(p *plot.Plot, notes []failNote) {
	for i, n := range notes {
		stack := 0
		for _, m := range notes[:i] {
			if m.at.X == n.at.X && math.Abs(math.Log(m.at.Y/n.at.Y)) < math.Log(1.5) {
				stack++
			}
		}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{n.at}, Labels: []string{n.text}})
		if err != nil {
			panic("assess: " + err.Error()) // one label, one point
		}
		l.TextStyle[0].Font = report.Font(8)
		l.TextStyle[0].Color = n.c
		l.TextStyle[0].XAlign, l.TextStyle[0].YAlign = draw.XLeft, draw.YBottom
		l.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(2 + 10*float64(stack))}
		p.Add(l)
	}
}

// failGlyph is a bold cross: a level where /fast requests failed.
type failGlyph struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (failGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	r := sty.Radius
	for _, d := range []vg.Length{r, -r} {
		var p vg.Path
		p.Move(vg.Point{X: pt.X - r, Y: pt.Y - d})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y + d})
		c.Stroke(p)
	}
}
