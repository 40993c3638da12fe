package report

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// Assessment is the section of `slowlab assess`'s results: lab lists it
// after the experiments' sections.
var Assessment = Section{Name: "assess", Marker: recorder.AssessmentFile, build: buildAssess}

func buildAssess(dir string) (*section, error) {
	a, err := recorder.ReadAssessment(dir)
	if err != nil {
		return nil, err
	}
	s := &section{id: "assess", title: "assess: " + a.Server + " " + a.Route + " on the " + a.Stack + " stack",
		intro: fmt.Sprintf("Each probe raised its kind of slow client (1, 2, 4, ... clients) while /fast ran open loop, and stopped "+
			"at the first level where /fast degraded: one request failed, or its p95 (nearest rank) was over 10 times the "+
			"baseline's and over the baseline's plus 500 ms. The assessment took %.0f s of its %.0f s budget.", a.TookS, a.BudgetS)}
	if f := assessFigure(a); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Level figure left out: no probe in %s measured a level with a /fast p95.", recorder.AssessmentFile)
	}
	t := &table{Caption: "Verdicts (" + recorder.AssessmentFile + "): the clients at which /fast degraded (- when it held up to " +
		"the clients tried), /fast p95 before the probe and at that level, /fast requests failed there, why the probe stopped, " +
		"what the stack's instruments saw holding it at its last level, and the fix whose measurement the page named shows.",
		Head: []string{"probe", "clients to degrade", "tried", "/fast p95 before (ms)", "/fast p95 at (ms)", "failed at", "stopped", "held", "fix", "measured in"}}
	for _, v := range a.Verdicts {
		n, at, failed := text("-"), text("-"), text("-")
		if v.ClientsToDegrade != nil {
			n = integer(*v.ClientsToDegrade)
			failed = integer(v.AtFailed)
			if v.AtP95MS != nil {
				at = ms(*v.AtP95MS)
			}
		}
		t.Rows = append(t.Rows, []cell{text(v.Probe), n, integer(v.Tried), ms(v.BaselineP95MS), at, failed,
			text(v.Stopped), text(v.Held.Summary), text(v.Fix), text(v.FixDoc)})
	}
	s.addTable(t)
	for _, v := range a.Verdicts {
		if lv := v.LastLevel(); lv != nil && lv.FastBackS != nil {
			s.blocks = append(s.blocks, block{note: fmt.Sprintf("%s: held past the window at %d clients, /fast came back %.1f s after it "+
				"with every client still connected: they no longer held it (a worker timeout, a proxy's send_timeout, or a proxy done buffering their responses).",
				v.Probe, lv.Clients, *lv.FastBackS)})
		}
		switch {
		case v.Absorbs != nil && v.Absorbs.Verdict == recorder.AbsorbsUncertain:
			s.blocks = append(s.blocks, block{note: fmt.Sprintf("%s: the %.1f MiB response is within the model's measured error (-%.0f%%, +%.0f%%) of what the path holds "+
				"(predicted %.1f MiB: %s): the model cannot tell whether a reader can hold a worker at this size.", v.Probe,
				float64(v.Absorbs.ResponseBytes)/(1<<20), 100*v.Absorbs.MarginUnder, 100*v.Absorbs.MarginOver,
				float64(v.Absorbs.PredictedBytes)/(1<<20), v.Absorbs.Hops)})
		case v.Absorbs != nil && v.Absorbs.Fits:
			s.blocks = append(s.blocks, block{note: fmt.Sprintf("%s: the %.1f MiB response fits in what the path holds (predicted %.1f MiB: %s%s): "+
				"a reader cannot hold a worker at this size.", v.Probe, float64(v.Absorbs.ResponseBytes)/(1<<20),
				float64(v.Absorbs.PredictedBytes)/(1<<20), v.Absorbs.Hops, withMargin("-", v.Absorbs.MarginUnder))})
		case v.Absorbs != nil:
			s.blocks = append(s.blocks, block{note: fmt.Sprintf("%s: the path holds %.1f MiB of the %.1f MiB response (predicted: %s%s); "+
				"the rest holds the app's send until the reader takes it.", v.Probe, float64(v.Absorbs.PredictedBytes)/(1<<20),
				float64(v.Absorbs.ResponseBytes)/(1<<20), v.Absorbs.Hops, withMargin("+", v.Absorbs.MarginOver))})
		case v.Unpredicted != "":
			s.blocks = append(s.blocks, block{note: fmt.Sprintf("%s: what the path holds was not predicted: %s.", v.Probe, strings.TrimSuffix(v.Unpredicted, "."))})
		}
	}
	return s, nil
}

// withMargin is the clause saying the model's measured error a verdict
// allowed for, sign "-" or "+"; none for a file written before margins.
func withMargin(sign string, margin float64) string {
	if margin == 0 {
		return ""
	}
	return fmt.Sprintf("; within the model's measured error of %s%.0f%%", sign, 100*margin)
}

// assessFigure draws each probe's /fast p95 at each level it measured,
// over the clients on a log scale, with the degradation line of its
// baseline; nil when no level has a p95.
func assessFigure(a recorder.Assessment) *figure {
	f := &figure{name: "assess-levels", title: "/fast p95 at each level of each probe",
		caption: "Each probe's /fast p95 (nearest rank, of the requests that succeeded) with 1, 2, 4, ... slow clients " +
			"in place; a hollow mark is a level where a /fast request failed. The dashed line of a probe's colour is where it " +
			"counts as degraded: over 10 times its baseline p95 and over the baseline plus 500 ms.",
		width: 8 * vg.Inch, height: 4.5 * vg.Inch}
	p := newPlot(f.title, "slow clients of the probe", "/fast p95 (ms)")
	grid(p, true, true)
	lo, hi, maxClients := math.Inf(1), 0.0, 1
	drawn := 0
	for i, v := range a.Verdicts {
		c := palette[i%len(palette)]
		var pts, failed plotter.XYs
		for _, lv := range v.Levels {
			if lv.FastOK == 0 || !(lv.P95MS > 0) {
				continue
			}
			xy := plotter.XY{X: float64(lv.Clients), Y: lv.P95MS}
			pts = append(pts, xy)
			if lv.FastFail > 0 {
				failed = append(failed, xy)
			}
			lo, hi, maxClients = math.Min(lo, lv.P95MS), math.Max(hi, lv.P95MS), max(maxClients, lv.Clients)
		}
		if len(pts) == 0 {
			continue
		}
		drawn++
		ln := line(pts, c)
		m := marks(pts, c, draw.CircleGlyph{})
		p.Add(ln, m)
		p.Legend.Add(v.Probe, ln, m)
		f.addSeries(v.Probe, len(pts))
		if len(failed) > 0 {
			p.Add(marks(failed, c, draw.RingGlyph{}))
		}
		if v.BaselineP95MS > 0 {
			limit := math.Max(10*v.BaselineP95MS, v.BaselineP95MS+500)
			hi = math.Max(hi, limit)
			lo = math.Min(lo, v.BaselineP95MS)
			th := line(plotter.XYs{{X: 1, Y: limit}, {X: float64(max(v.Tried, 1)), Y: limit}}, c)
			th.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(th)
		}
	}
	if drawn == 0 {
		return nil
	}
	setLog(&p.X, 1, float64(maxClients))
	p.X.Tick.Marker = levelTicks{}
	setLog(&p.Y, lo, hi)
	f.panels = append(f.panels, p)
	return f
}

// levelTicks labels the levels a probe tries: 1, 2, 4, ...
type levelTicks struct{}

// Ticks implements plot.Ticker.
func (levelTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for v := 1.0; v <= hi; v *= 2 {
		if v >= lo {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprint(v)})
		}
	}
	return ticks
}
