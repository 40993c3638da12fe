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
			p.Note("%s: held past the window at %s, /fast came back %.1f s after it with every client still connected: %s.",
				v.Probe, report.Count(lv.Clients, "client"), *lv.FastBackS, freedBy)
		}
		switch a := v.Absorbs; {
		case a != nil && verdictOf(*a) == AbsorbsUncertain:
			p.Note("%s: the %s response is within the model's measured error (-%s, +%s) of what the path holds "+
				"(predicted %s: %s): the model cannot tell whether a reader can hold a worker at this size.", v.Probe,
				mibs(float64(a.ResponseBytes)), pct(a.MarginUnder), pct(a.MarginOver), mibs(float64(a.PredictedBytes)), a.Hops)
		case a != nil && verdictOf(*a) == AbsorbsFits:
			p.Note("%s: the %s response fits in what the path holds (predicted %s: %s%s): a reader cannot hold a worker at this size.",
				v.Probe, mibs(float64(a.ResponseBytes)), mibs(float64(a.PredictedBytes)), a.Hops, withMargin("-", a.MarginUnder))
		case a != nil:
			p.Note("%s: the path holds %s of the %s response (predicted: %s%s); the rest holds the app's send until the reader takes it.",
				v.Probe, mibs(float64(a.PredictedBytes)), mibs(float64(a.ResponseBytes)), a.Hops, withMargin("+", a.MarginOver))
		case v.Unpredicted != "":
			p.Note("%s: what the path holds was not predicted: %s.", v.Probe, strings.TrimSuffix(v.Unpredicted, "."))
		}
	}
	return p, nil
})

// verdictsTable is the table of the verdicts, declared once: the CLI
// prints it (Result.Print, one word a value: docs/assess.md shows it)
// and the report draws it, with the held summary, the fix and its page,
// which the CLI prints below the table instead.
var verdictsTable = report.Table[Verdict]{
	Caption: "Verdicts (" + File + "): the clients at which /fast degraded (- when it held up to " +
		"the clients tried), how sure that is and on how many /fast windows, the most clients /fast held with every one in place, " +
		"/fast p95 before the probe and at that level, /fast requests failed there (of those sent), why the probe stopped (hover: in full), " +
		"what the stack's instruments saw holding it at its last level, and the fix whose measurement the page named shows.",
	Cols: []report.Column[Verdict]{
		report.Col("probe", func(v *Verdict) report.Cell { return report.Text(v.Probe) }),
		report.Col("clients to degrade", func(v *Verdict) report.Cell {
			if v.ClientsToDegrade == nil {
				return dash
			}
			return report.Int(*v.ClientsToDegrade)
		}),
		report.Col("sure/windows", func(v *Verdict) report.Cell {
			switch {
			case v.Sure == "":
				return report.Text("-")
			case v.Windows > 0:
				return report.Text(fmt.Sprintf("%s/%d", v.Sure, v.Windows))
			}
			return report.Text(v.Sure)
		}),
		report.Col("held in place", func(v *Verdict) report.Cell { return report.Int(v.HeldInPlace) }),
		report.Col("tried", func(v *Verdict) report.Cell { return report.Int(v.Tried) }),
		report.Col("/fast p95 ms before", func(v *Verdict) report.Cell {
			if v.BaselineP95MS <= 0 { // no baseline measured: the probe stopped before it
				return dash
			}
			return report.Fixed(v.BaselineP95MS, 1)
		}),
		report.Col("at", func(v *Verdict) report.Cell {
			if v.AtP95MS == nil {
				return dash
			}
			return report.Fixed(*v.AtP95MS, 1)
		}),
		report.Col("failed at", func(v *Verdict) report.Cell {
			if v.ClientsToDegrade == nil {
				return dash
			}
			if lv := v.LastLevel(); lv != nil && lv.FastFail > 0 {
				return report.Cell{Text: fmt.Sprintf("%d/%d", lv.FastFail, lv.FastSent), Num: true}
			}
			return report.Int(0)
		}),
		report.Col("stopped", func(v *Verdict) report.Cell { return report.Cell{Text: stoppedWord(*v), Title: v.Stopped} }),
		report.HTMLCol("held", func(v *Verdict) report.Cell { return report.Text(v.Held.Summary) }),
		report.HTMLCol("fix", func(v *Verdict) report.Cell { return report.Text(v.Fix) }),
		report.HTMLCol("measured in", func(v *Verdict) report.Cell { return report.Text(v.FixDoc) }),
	},
}

// dash is a numeric column's "-": no level degraded, or none measured
// the value.
var dash = report.Cell{Text: "-", Num: true}

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
