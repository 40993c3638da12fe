package longpoll

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Print implements lab.Result: the runs table, then, for conditions run
// more than once, how many runs had a full worker and a probe over 1 s,
// and Fisher's exact test between conditions that differ only in their
// probe count.
func (r *Result) Print(w io.Writer) {
	groupsTable.WriteText(w, r.Groups)
	sums := Summarize(r.Groups)
	if !slices.ContainsFunc(sums, func(s Summary) bool { return s.Runs > 1 }) {
		return
	}
	fmt.Fprintln(w, "\nover the repetitions:")
	for _, s := range sums {
		fmt.Fprintf(w, "  %s hold %d probes %d: %d runs; a worker full in %s runs; a probe over 1 s in %d of %d runs; waves after which a worker was full: %s\n",
			s.Server, s.Hold, s.Probes, s.Runs, s.fullRuns().String(), s.RunsOver1s, s.Runs, s.fullWaves().String())
	}
	for _, c := range Compare(sums) {
		fmt.Fprintf(w, "  %s hold %d, %d against %d probes: Fisher's exact p (two-sided) = %s for runs with a probe over 1 s, %s for runs with a full worker\n",
			c.A.Server, c.A.Hold, c.A.Probes, c.B.Probes, pValue(c.POver1s), pValue(c.PFullRuns))
	}
}

// notMeasured is the cell of a value that was not measured.
func notMeasured() report.Cell { return report.Opt(recorder.None(), report.Decimals(0)) }

// slotsCell shows a slot count, or that the server's size bounds none
// (an event loop works on any number of requests at once).
func slotsCell(m recorder.Maybe) report.Cell {
	if !m.Valid {
		return report.Cell{Text: "unbounded", Title: "the server's size does not bound how many requests it works on at once", Num: true}
	}
	return report.Fixed(m.Value, 0)
}

// groupsTable is the runs table (a row per run that ended ok), printed by
// the CLI and drawn in the report, where hovering a cell says more: the
// elapsed time behind req/s, the slot arithmetic behind free, and the
// busiest worker's slots and full time behind worker_held.
var groupsTable = report.Table[Group]{
	Caption: "Long-poll runs (" + groupFile + "): probe successes, failures, latency percentiles, throughput over the elapsed " +
		"probing time, the slots and the slots free of held long-polls (hover: held long-polls + probe workers against " +
		"slots), the most long-polls one worker held (hover: of its slots), how long some worker was full, probes slower " +
		"than 1 s, and the long-polls' issue waves after which some worker was full.",
	Legend: []string{
		"worker_held: most long-polls one worker held at once; full_s: seconds some worker had every thread holding one",
		"(with Gunicorn's accept policy, a request it accepted then waited for a long-poll to end); >1s: probes over 1 s;",
		"full_waves: issue waves of the long-polls in the sampled window after which some worker was full, of all such waves; req/s: over the elapsed time",
	},
	Cols: []report.Column[Group]{
		report.Col("server", func(g *Group) report.Cell { return report.Text(g.Server) }),
		report.Col("hold", func(g *Group) report.Cell { return report.Int(g.Hold) }),
		report.Col("probes", func(g *Group) report.Cell { return report.Int(g.ProbeConcurrency) }),
		report.Col("ok", func(g *Group) report.Cell { return report.Int(g.OK) }),
		report.Col("failed", func(g *Group) report.Cell { return report.Int(g.Failed) }),
		report.Col("p50_ms", func(g *Group) report.Cell { return report.Opt(g.P50MS, report.Decimals(1)) }),
		report.Col("p95_ms", func(g *Group) report.Cell { return report.Opt(g.P95MS, report.Decimals(1)) }),
		report.Col("max_ms", func(g *Group) report.Cell { return report.Opt(g.MaxMS, report.Decimals(1)) }),
		report.Col("req/s", func(g *Group) report.Cell {
			c := report.Fixed(g.ThroughputRPS, 1)
			c.Title = fmt.Sprintf("over %.1f s elapsed", g.ElapsedS)
			return c
		}),
		report.Col("slots", func(g *Group) report.Cell { return slotsCell(g.Slots) }),
		report.Col("free", func(g *Group) report.Cell {
			c := slotsCell(g.FreeSlots)
			c.Title = slotArithmetic(g)
			return c
		}),
		report.Col("worker_held", func(g *Group) report.Cell {
			c := report.Opt(g.MaxWorkerHeld, report.Decimals(0))
			if g.MaxWorkerHeld.Valid && (g.WorkerSlots.Valid || g.FullWorkerS.Valid && g.FullWorkerS.Value > 0) {
				c.Title = workerHeld(g)
			}
			return c
		}),
		report.Col("full_s", func(g *Group) report.Cell { return report.Opt(g.FullWorkerS, report.Decimals(1)) }),
		report.Col(">1s", func(g *Group) report.Cell { return report.Int(g.ProbesOver1s) }),
		report.Col("full_waves", wavesCell),
	},
}

// wavesCell is full waves / waves, not measured without both.
func wavesCell(g *Group) report.Cell {
	if !g.Waves.Valid || !g.FullWaves.Valid {
		return notMeasured()
	}
	return report.Cell{Text: fmt.Sprintf("%.0f/%.0f", g.FullWaves.Value, g.Waves.Value), Num: true}
}

// slotArithmetic compares what wants a slot with the slots there are:
// held long-polls plus probe workers against workers x threads, and how
// many requests must wait for a slot at any time if every worker took
// only what it had threads for.
func slotArithmetic(g *Group) string {
	need := g.Hold + g.ProbeConcurrency
	if !g.Slots.Valid {
		return fmt.Sprintf("%d + %d = %d, slots not bounded by the server's size", g.Hold, g.ProbeConcurrency, need)
	}
	slots := int(g.Slots.Value)
	if need > slots {
		return fmt.Sprintf("%d + %d = %d > %d slots: %d wait", g.Hold, g.ProbeConcurrency, need, slots, need-slots)
	}
	return fmt.Sprintf("%d + %d = %d ≤ %d slots: none wait", g.Hold, g.ProbeConcurrency, need, slots)
}

// workerHeld says how many long-polls the busiest worker held (measured)
// against its threads, and for how long it had none free.
func workerHeld(g *Group) string {
	s := fmt.Sprintf("%.0f", g.MaxWorkerHeld.Value)
	if g.WorkerSlots.Valid {
		s += fmt.Sprintf(" of %.0f slots", g.WorkerSlots.Value)
	}
	if g.FullWorkerS.Valid && g.FullWorkerS.Value > 0 {
		s += fmt.Sprintf(", full for %.1f s", g.FullWorkerS.Value)
	}
	return s
}

// heldSampling says how often held long-polls were sampled, from the
// runs' sample counts over their elapsed time.
func heldSampling(groups []Group) string {
	samples, secs := 0, 0.0
	for _, g := range groups {
		if g.HeldSamples > 0 {
			samples += g.HeldSamples
			secs += g.ElapsedS
		}
	}
	if samples == 0 {
		return "not sampled"
	}
	return fmt.Sprintf("sampled about every %.0f ms, %d samples over %.0f s", 1000*secs/float64(samples), samples, secs)
}

func pValue(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}

// nOf is "N of M", not measured when counted (the runs that measured it)
// is 0.
func nOf(n, m, counted int) report.Cell {
	if counted == 0 {
		return notMeasured()
	}
	return report.Text(fmt.Sprintf("%d of %d", n, m))
}

// fullRuns is "N of M": the runs in which some worker was sampled full, of
// those sampled; fullWaves the issue waves after which some worker was
// full, of all waves of the runs that counted them.
func (s Summary) fullRuns() report.Cell  { return nOf(s.RunsFull, s.Sampled, s.Sampled) }
func (s Summary) fullWaves() report.Cell { return nOf(s.FullWaves, s.Waves, s.Counted) }

// p is a p-value of r's comparison, not measured when it has none.
func (r *rep) p(of func(*Comparison) float64) report.Cell {
	if r.cmp == nil {
		return notMeasured()
	}
	return report.Fixed(of(r.cmp), 3)
}

// rep is a condition over its repetitions with its comparison against
// the condition that differs only in its probe count, if any: a row of
// repsTable.
type rep struct {
	Summary
	cmp   *Comparison
	other Summary
}

// reps are the conditions over their repetitions, each with its
// comparison; nil when no condition ran more than once.
func reps(groups []Group) []rep {
	sums := Summarize(groups)
	if !slices.ContainsFunc(sums, func(s Summary) bool { return s.Runs > 1 }) {
		return nil
	}
	cmp := Compare(sums)
	out := make([]rep, len(sums))
	for i, s := range sums {
		out[i].Summary = s
		if j := slices.IndexFunc(cmp, func(c Comparison) bool { return c.A == s || c.B == s }); j >= 0 {
			out[i].cmp, out[i].other = &cmp[j], cmp[j].B
			if cmp[j].B == s {
				out[i].other = cmp[j].A
			}
		}
	}
	return out
}

// repsTable summarizes conditions run more than once, in the report (the
// CLI prints the same as sentences, printReps).
var repsTable = report.Table[rep]{
	Caption: "Over the repetitions of each condition: runs in which some worker was sampled full, runs with a " +
		"probe over 1 s, and issue waves after which a worker was full. p: Fisher's exact test (two-sided) against the " +
		"condition with the same server and held long-polls but another probe count; a small p says the two differ in " +
		"how often it happens.",
	Cols: []report.Column[rep]{
		report.Col("server", func(r *rep) report.Cell { return report.Text(r.Server) }),
		report.Col("held", func(r *rep) report.Cell { return report.Int(r.Hold) }),
		report.Col("probes", func(r *rep) report.Cell { return report.Int(r.Probes) }),
		report.Col("runs", func(r *rep) report.Cell { return report.Int(r.Runs) }),
		report.Col("runs with a full worker", func(r *rep) report.Cell { return r.fullRuns() }),
		report.Col("runs with a probe > 1 s", func(r *rep) report.Cell { return nOf(r.RunsOver1s, r.Runs, r.Runs) }),
		report.Col("waves with a full worker", func(r *rep) report.Cell { return r.fullWaves() }),
		report.Col("p (probe > 1 s)", func(r *rep) report.Cell { return r.p(func(c *Comparison) float64 { return c.POver1s }) }),
		report.Col("p (full worker)", func(r *rep) report.Cell { return r.p(func(c *Comparison) float64 { return c.PFullRuns }) }),
		report.Col("against", func(r *rep) report.Cell {
			if r.cmp == nil {
				return report.Text("")
			}
			return report.Text(fmt.Sprintf("%d probes", r.other.Probes))
		}),
	},
}

// Section is the long-poll section of the report, which the registration
// carries: the probe latency figure, the runs table and, for conditions
// run more than once, the table over their repetitions.
var Section = report.NewSection(Name, groupFile, func(dir string) (*report.Part, error) {
	groups, err := recorder.ReadFile[Group](filepath.Join(dir, groupFile))
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, "Held long-poll requests occupy worker slots; closed-loop probes measure what is left "+
		"(docs/experiments.md section 2). Slots = workers × threads; free slots = slots − held long-polls. "+
		"The total is not the whole rule: a Gunicorn worker accepts whether or not it has a free thread, so "+
		"while one worker's threads all hold long-polls, every request it accepts waits for one of them to end, "+
		"however many slots the other workers have free. The busiest worker's count shows when that happened.")
	if !p.AddMarks(latencyFigure(groups)) {
		p.Skip("Probe latency figure left out: no condition in %s has a probe latency above 0.", groupFile)
	}
	t := groupsTable
	t.Caption += " Held long-polls per worker " + heldSampling(groups) + "."
	report.AddTable(p, &t, groups)
	if r := reps(groups); r != nil {
		report.AddTable(p, &repsTable, r)
	}
	return p, nil
})

func groupLabel(g Group) string {
	return fmt.Sprintf("%s, %d held, %d probes", g.Server, g.Hold, g.ProbeConcurrency)
}

// latencies are the probe latencies the figure draws of g: p50, p95
// and max.
func latencies(g Group) []recorder.Maybe { return []recorder.Maybe{g.P50MS, g.P95MS, g.MaxMS} }

// latencyFigure is the probe latency figure: p50, p95 and max per run on
// a log axis, a run drawn with those of its latencies above 0 (a run may
// have measured some and not others), left out when none is.
func latencyFigure(groups []Group) *report.ConditionMarks {
	m := &report.ConditionMarks{Name: "longpoll-latency", Title: "Probe latency per long-poll condition",
		Axis: "probe latency (ms, log scale)", Partial: true, Labels: latencyLabels(groups),
		Series: []report.BarSeries{{Name: "p50"}, {Name: "p95"}, {Name: "max"}},
		Caption: "p50, p95 and max of the condition's probe latencies (request start to last body byte, " +
			"successful probes; nearest-rank) as " + groupFile + " reports them, one row per run. Log scale. Max jumps when " +
			"one worker's threads all hold long-polls (\"a worker full\"): Gunicorn workers accept whether or not a thread is " +
			"free, and held requests need not spread evenly, so the slot total alone does not predict it."}
	for _, g := range groups {
		for k, v := range latencies(g) {
			m.Series[k].Values = append(m.Series[k].Values, report.ValueOf(v, 1))
		}
	}
	return m
}

// latencyLabels names each run's row of the latency figure: its
// condition, its rep when the figure draws another run of that condition
// (one with a latency above 0), its free slots and how long a worker was
// full.
func latencyLabels(groups []Group) []string {
	seen := map[string]int{}
	for _, g := range groups {
		if slices.ContainsFunc(latencies(g), func(v recorder.Maybe) bool { return v.Valid && v.Value > 0 }) {
			seen[groupLabel(g)]++
		}
	}
	labels := make([]string, len(groups))
	for i, g := range groups {
		l := groupLabel(g)
		if seen[l] > 1 { // repetitions: tell the runs apart
			if j := strings.LastIndex(g.RunID, ".rep"); j >= 0 {
				l += ", rep " + g.RunID[j+len(".rep"):]
			}
		}
		if g.Slots.Valid {
			l += fmt.Sprintf(", %.0f of %.0f slots free", g.FreeSlots.Value, g.Slots.Value)
		}
		if g.FullWorkerS.Valid && g.FullWorkerS.Value > 0 {
			l += fmt.Sprintf(", a worker full %.1f s", g.FullWorkerS.Value)
		}
		labels[i] = l
	}
	return labels
}
