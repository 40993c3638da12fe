package report

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"

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
		s.skip("Level figure left out: no probe in %s measured /fast at a level (a shard other than 0 measures none).", recorder.AssessmentFile)
	}
	t := &table{Caption: "Verdicts (" + recorder.AssessmentFile + "): the clients at which /fast degraded (- when it held up to " +
		"the clients tried), /fast p95 before the probe and at that level, /fast requests failed there, why the probe stopped, " +
		"what the stack's instruments saw holding it at its last level, and the fix whose measurement the page named shows.",
		Head: []string{"probe", "clients to degrade", "tried", "/fast p95 before (ms)", "/fast p95 at (ms)", "failed at", "stopped", "held", "fix", "measured in"}}
	for _, v := range a.Verdicts {
		n, at, failed := Text("-"), Text("-"), Text("-")
		if v.ClientsToDegrade != nil {
			n = Int(*v.ClientsToDegrade)
			failed = Int(v.AtFailed)
			if v.AtP95MS != nil {
				at = Sig(*v.AtP95MS)
			}
		}
		t.Rows = append(t.Rows, []Cell{Text(v.Probe), n, Int(v.Tried), Sig(v.BaselineP95MS), at, failed,
			Text(v.Stopped), Text(v.Held.Summary), Text(v.Fix), Text(v.FixDoc)})
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
