package assess

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"

	"github.com/slowlab/slowlab/report"
)

// Section is the section of `slowlab assess`'s results (assessment.json)
// in report.html: the level figure, the verdicts and what each probe's
// path held. lab lists it after the experiments' sections (register.go).
var Section = report.NewSection(Name, File, func(dir string) (*report.Part, error) {
	a, err := ReadAssessment(dir)
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, fmt.Sprintf("Each probe raised its kind of slow client (1, 2, 4, ... clients) while /fast ran open loop, and stopped "+
		"at the first level where /fast degraded: one request failed, or its p95 (nearest rank) was over 10 times the "+
		"baseline's and over the baseline's plus 500 ms. The assessment took %.0f s of its %.0f s budget.", a.TookS, a.BudgetS))
	p.SetTitle("assess: " + a.Server + " " + a.Route + " on the " + a.Stack + " stack")
	if d := levelFigure(a); d != nil {
		p.AddDrawing(d)
	} else {
		p.Skip("Level figure left out: no probe in %s measured /fast at a level (a shard other than 0 measures none).", File)
	}
	report.AddTable(p, &verdictsTable, a.Verdicts)
	for _, v := range a.Verdicts {
		if lv := v.LastLevel(); lv != nil && lv.FastBackS != nil {
			p.Note("%s: held past the window at %d clients, /fast came back %.1f s after it "+
				"with every client still connected: they no longer held it (a worker timeout, a proxy's send_timeout, or a proxy done buffering their responses).",
				v.Probe, lv.Clients, *lv.FastBackS)
		}
		switch {
		case v.Absorbs != nil && v.Absorbs.Verdict == AbsorbsUncertain:
			p.Note("%s: the %.1f MiB response is within the model's measured error (-%.0f%%, +%.0f%%) of what the path holds "+
				"(predicted %.1f MiB: %s): the model cannot tell whether a reader can hold a worker at this size.", v.Probe,
				float64(v.Absorbs.ResponseBytes)/(1<<20), 100*v.Absorbs.MarginUnder, 100*v.Absorbs.MarginOver,
				float64(v.Absorbs.PredictedBytes)/(1<<20), v.Absorbs.Hops)
		case v.Absorbs != nil && v.Absorbs.Fits:
			p.Note("%s: the %.1f MiB response fits in what the path holds (predicted %.1f MiB: %s%s): "+
				"a reader cannot hold a worker at this size.", v.Probe, float64(v.Absorbs.ResponseBytes)/(1<<20),
				float64(v.Absorbs.PredictedBytes)/(1<<20), v.Absorbs.Hops, withMargin("-", v.Absorbs.MarginUnder))
		case v.Absorbs != nil:
			p.Note("%s: the path holds %.1f MiB of the %.1f MiB response (predicted: %s%s); "+
				"the rest holds the app's send until the reader takes it.", v.Probe, float64(v.Absorbs.PredictedBytes)/(1<<20),
				float64(v.Absorbs.ResponseBytes)/(1<<20), v.Absorbs.Hops, withMargin("+", v.Absorbs.MarginOver))
		case v.Unpredicted != "":
			p.Note("%s: what the path holds was not predicted: %s.", v.Probe, strings.TrimSuffix(v.Unpredicted, "."))
		}
	}
	return p, nil
})

// verdictsTable is the report's table of the verdicts. The CLI prints
// its own (Result.Print: sure/windows and held in place, without the
// held summary and the fix, which it prints below), docs/assess.md
// shows that one.
var verdictsTable = report.Table[Verdict]{
	Caption: "Verdicts (" + File + "): the clients at which /fast degraded (- when it held up to " +
		"the clients tried), /fast p95 before the probe and at that level, /fast requests failed there, why the probe stopped, " +
		"what the stack's instruments saw holding it at its last level, and the fix whose measurement the page named shows.",
	Cols: []report.Column[Verdict]{
		report.Col("probe", func(v *Verdict) report.Cell { return report.Text(v.Probe) }),
		report.Col("clients to degrade", func(v *Verdict) report.Cell {
			if v.ClientsToDegrade == nil {
				return report.Text("-")
			}
			return report.Int(*v.ClientsToDegrade)
		}),
		report.Col("tried", func(v *Verdict) report.Cell { return report.Int(v.Tried) }),
		report.Col("/fast p95 before (ms)", func(v *Verdict) report.Cell { return report.Sig(v.BaselineP95MS) }),
		report.Col("/fast p95 at (ms)", func(v *Verdict) report.Cell {
			if v.ClientsToDegrade == nil || v.AtP95MS == nil {
				return report.Text("-")
			}
			return report.Sig(*v.AtP95MS)
		}),
		report.Col("failed at", func(v *Verdict) report.Cell {
			if v.ClientsToDegrade == nil {
				return report.Text("-")
			}
			return report.Int(v.AtFailed)
		}),
		report.Col("stopped", func(v *Verdict) report.Cell { return report.Text(v.Stopped) }),
		report.Col("held", func(v *Verdict) report.Cell { return report.Text(v.Held.Summary) }),
		report.Col("fix", func(v *Verdict) report.Cell { return report.Text(v.Fix) }),
		report.Col("measured in", func(v *Verdict) report.Cell { return report.Text(v.FixDoc) }),
	},
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
