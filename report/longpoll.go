package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// groupsFile is the long-poll summary: one row per condition.
var groupsFile = recorder.FileName[recorder.LongPollGroup]()

// LongPoll is the long-poll section, which long-poll's registration in lab carries.
var LongPoll = Section{Name: "long-poll", Marker: groupsFile, build: buildLongPoll}

func groupLabel(g recorder.LongPollGroup) string {
	return fmt.Sprintf("%s, %d held, %d probes", g.Server, g.Hold, g.ProbeConcurrency)
}

// slotArithmetic compares what wants a slot with the slots there are:
// held long-polls plus probe workers against workers x threads, and how
// many requests must wait for a slot at any time if every worker took
// only what it had threads for.
func slotArithmetic(g recorder.LongPollGroup) string {
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

// slotsCell shows a slot count, or that the server's size bounds none
// (an event loop works on any number of requests at once).
func slotsCell(m recorder.Maybe) Cell {
	if !m.Valid {
		return Cell{Text: "unbounded", Title: "the server's size does not bound how many requests it works on at once", Num: true}
	}
	return Fixed(m.Value, 0)
}

// workerHeld says how many long-polls the busiest worker held against its
// threads, and for how long it had none free.
func workerHeld(g recorder.LongPollGroup) string {
	if !g.MaxWorkerHeld.Valid {
		return "not measured"
	}
	s := fmt.Sprintf("%.0f", g.MaxWorkerHeld.Value)
	if g.WorkerSlots.Valid {
		s += fmt.Sprintf(" of %.0f slots", g.WorkerSlots.Value)
	}
	if g.FullWorkerS.Valid && g.FullWorkerS.Value > 0 {
		s += fmt.Sprintf(", full for %.1f s", g.FullWorkerS.Value)
	}
	return s
}

func buildLongPoll(dir string) (*section, error) {
	groups, err := recorder.ReadFile[recorder.LongPollGroup](filepath.Join(dir, groupsFile))
	if err != nil {
		return nil, err
	}
	s := &section{id: "long-poll", title: "long-poll",
		intro: "Held long-poll requests occupy worker slots; closed-loop probes measure what is left " +
			"(docs/experiments.md section 2). Slots = workers × threads; free slots = slots − held long-polls. " +
			"The total is not the whole rule: a Gunicorn worker accepts whether or not it has a free thread, so " +
			"while one worker's threads all hold long-polls, every request it accepts waits for one of them to end, " +
			"however many slots the other workers have free. The busiest worker's count shows when that happened."}
	if f := longPollFigure(groups); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Probe latency figure left out: no condition in %s has a probe latency above 0.", groupsFile)
	}
	t := &table{Caption: "Long-poll runs (" + groupsFile + "): probe successes, failures, latency " +
		"percentiles, probes slower than 1 s and throughput over the elapsed probing time, with the slot arithmetic " +
		"(held long-polls + probe workers against slots), the most long-polls one worker held (" + heldSampling(groups) +
		") and the long-polls' issue waves after which some worker was full.",
		Head: []string{"server", "held", "probes", "elapsed (s)", "ok", "failed", "p50 (ms)", "p95 (ms)",
			"max (ms)", "> 1 s", "throughput (req/s)", "slots", "free slots", "held + probes vs slots", "busiest worker held",
			"waves with a full worker"}}
	for _, g := range groups {
		waves := notMeasured
		if g.Waves.Valid && g.FullWaves.Valid {
			waves = Text(fmt.Sprintf("%.0f of %.0f", g.FullWaves.Value, g.Waves.Value))
		}
		t.Rows = append(t.Rows, []Cell{Text(g.Server), Int(g.Hold), Int(g.ProbeConcurrency),
			Fixed(g.ElapsedS, 1), Int(g.OK), Int(g.Failed), Opt(g.P50MS, Sig), Opt(g.P95MS, Sig),
			Opt(g.MaxMS, Sig), Int(g.ProbesOver1s), Sig(g.ThroughputRPS), slotsCell(g.Slots), slotsCell(g.FreeSlots),
			Text(slotArithmetic(g)), Text(workerHeld(g)), waves})
	}
	s.addTable(t)
	if rt := repsTable(groups); rt != nil {
		s.addTable(rt)
	}
	return s, nil
}

// heldSampling says how often held long-polls were sampled, from the
// runs' sample counts over their elapsed time.
func heldSampling(groups []recorder.LongPollGroup) string {
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

// repsTable summarizes conditions run more than once: how many runs had a
// full worker and a probe over 1 s, and Fisher's exact test between
// conditions that differ only in their probe count; nil without repetitions.
func repsTable(groups []recorder.LongPollGroup) *table {
	sums := recorder.SummarizeLongPoll(groups)
	if !slices.ContainsFunc(sums, func(s recorder.LongPollSummary) bool { return s.Runs > 1 }) {
		return nil
	}
	t := &table{Caption: "Over the repetitions of each condition: runs in which some worker was sampled full, runs with a " +
		"probe over 1 s, and issue waves after which a worker was full. p: Fisher's exact test (two-sided) against the " +
		"condition with the same server and held long-polls but another probe count; a small p says the two differ in " +
		"how often it happens.",
		Head: []string{"server", "held", "probes", "runs", "runs with a full worker", "runs with a probe > 1 s",
			"waves with a full worker", "p (probe > 1 s)", "p (full worker)", "against"}}
	cmp := recorder.CompareLongPoll(sums)
	for _, s := range sums {
		full, waves := notMeasured, notMeasured
		if s.Sampled > 0 {
			full = Text(fmt.Sprintf("%d of %d", s.RunsFull, s.Sampled))
		}
		if s.Counted > 0 {
			waves = Text(fmt.Sprintf("%d of %d", s.FullWaves, s.Waves))
		}
		pOver, pFull, against := notMeasured, notMeasured, Text("")
		for _, c := range cmp {
			if c.A == s || c.B == s {
				other := c.B
				if c.B == s {
					other = c.A
				}
				pOver, pFull = Fixed(c.POver1s, 3), Fixed(c.PFullRuns, 3)
				against = Text(fmt.Sprintf("%d probes", other.Probes))
				break
			}
		}
		t.Rows = append(t.Rows, []Cell{Text(s.Server), Int(s.Hold), Int(s.Probes), Int(s.Runs), full,
			Text(fmt.Sprintf("%d of %d", s.RunsOver1s, s.Runs)), waves, pOver, pFull, against})
	}
	return t
}

// longPollFigure draws p50, p95 and max probe latency per condition on a
// log axis, or returns nil when there is nothing to draw.
func longPollFigure(groups []recorder.LongPollGroup) *figure {
	var rows []recorder.LongPollGroup
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		drawn := false
		for _, v := range []recorder.Maybe{g.P50MS, g.P95MS, g.MaxMS} {
			if v.Valid && v.Value > 0 {
				drawn = true
				lo, hi = math.Min(lo, v.Value), math.Max(hi, v.Value)
			}
		}
		if drawn {
			rows = append(rows, g)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: "longpoll-latency", title: "Probe latency per long-poll condition",
		width: 8 * vg.Inch, height: RowsHeight(len(rows))}
	p := NewPlot(f.title, "probe latency (ms, log scale)", "condition")
	Grid(p, true, false)
	seen := map[string]int{}
	for _, g := range rows {
		seen[groupLabel(g)]++
	}
	labels := make([]string, len(rows))
	for i, g := range rows {
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
	ys := ConditionRows(p, labels)
	stats := []struct {
		name  string
		get   func(recorder.LongPollGroup) recorder.Maybe
		shape draw.GlyphDrawer
	}{
		{"p50", func(g recorder.LongPollGroup) recorder.Maybe { return g.P50MS }, draw.BoxGlyph{}},
		{"p95", func(g recorder.LongPollGroup) recorder.Maybe { return g.P95MS }, draw.TriangleGlyph{}},
		{"max", func(g recorder.LongPollGroup) recorder.Maybe { return g.MaxMS }, draw.CrossGlyph{}},
	}
	for i, st := range stats {
		var xys plotter.XYs
		for j, g := range rows {
			if v := st.get(g); v.Valid && v.Value > 0 {
				xys = append(xys, plotter.XY{X: v.Value, Y: ys[j]})
			}
		}
		m := Marks(xys, ColorAt(i), st.shape)
		p.Add(m)
		p.Legend.Add(st.name, m)
		f.addSeries(st.name, len(m.XYs))
	}
	SetLog(&p.X, lo, hi)
	p.X.Max = hi * 6 // room for the legend right of the slowest probe
	f.panels = []*plot.Plot{p}
	f.caption = "p50, p95 and max of the condition's probe latencies (request start to last body byte, " +
		"successful probes; nearest-rank) as " + groupsFile + " reports them, one row per run. Log scale. Max jumps when " +
		"one worker's threads all hold long-polls (\"a worker full\"): Gunicorn workers accept whether or not a thread is " +
		"free, and held requests need not spread evenly, so the slot total alone does not predict it."
	return f
}
