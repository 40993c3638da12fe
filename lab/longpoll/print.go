package longpoll

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Print implements lab.Result.
func (r *Result) Print(w io.Writer) { PrintLongPoll(w, r.Groups) }

// PrintLongPoll writes the groups table as aligned text, then, for
// conditions run more than once, how many runs had a full worker and a
// probe over 1 s, and Fisher's exact test between conditions that differ
// only in their probe count.
func PrintLongPoll(w io.Writer, groups []recorder.LongPollGroup) {
	fmt.Fprintf(w, "%-14s %5s %7s %7s %7s %10s %10s %10s %9s %6s %5s %11s %8s %7s %11s\n", "server", "hold", "probes", "ok", "failed",
		"p50_ms", "p95_ms", "max_ms", "req/s", "slots", "free", "worker_held", "full_s", ">1s", "full_waves")
	for _, g := range groups {
		fmt.Fprintf(w, "%-14s %5d %7d %7d %7d %10s %10s %10s %9.1f %6s %5s %11s %8s %7d %11s\n", g.Server, g.Hold, g.ProbeConcurrency, g.OK, g.Failed,
			lab.Num(g.P50MS, 1), lab.Num(g.P95MS, 1), lab.Num(g.MaxMS, 1), g.ThroughputRPS, lab.Num(g.Slots, 0), lab.Num(g.FreeSlots, 0),
			lab.Num(g.MaxWorkerHeld, 0), lab.Num(g.FullWorkerS, 1), g.ProbesOver1s, wavesText(g))
	}
	fmt.Fprintln(w, "worker_held: most long-polls one worker held at once; full_s: seconds some worker had every thread holding one")
	fmt.Fprintln(w, "(with Gunicorn's accept policy, a request it accepted then waited for a long-poll to end); >1s: probes over 1 s;")
	fmt.Fprintln(w, "full_waves: issue waves of the long-polls in the sampled window after which some worker was full, of all such waves; req/s: over the elapsed time")
	printLongPollReps(w, groups)
}

func wavesText(g recorder.LongPollGroup) string {
	if !g.Waves.Valid || !g.FullWaves.Valid {
		return "-"
	}
	return fmt.Sprintf("%.0f/%.0f", g.FullWaves.Value, g.Waves.Value)
}

// printLongPollReps prints the across-repetition summary, if any
// condition ran more than once.
func printLongPollReps(w io.Writer, groups []recorder.LongPollGroup) {
	sums := recorder.SummarizeLongPoll(groups)
	if !slices.ContainsFunc(sums, func(s recorder.LongPollSummary) bool { return s.Runs > 1 }) {
		return
	}
	fmt.Fprintln(w, "\nover the repetitions:")
	for _, s := range sums {
		full := "-"
		if s.Sampled > 0 {
			full = fmt.Sprintf("%d of %d", s.RunsFull, s.Sampled)
		}
		waves := "-"
		if s.Counted > 0 {
			waves = fmt.Sprintf("%d of %d", s.FullWaves, s.Waves)
		}
		fmt.Fprintf(w, "  %s hold %d probes %d: %d runs; a worker full in %s runs; a probe over 1 s in %d of %d runs; waves after which a worker was full: %s\n",
			s.Server, s.Hold, s.Probes, s.Runs, full, s.RunsOver1s, s.Runs, waves)
	}
	for _, c := range recorder.CompareLongPoll(sums) {
		fmt.Fprintf(w, "  %s hold %d, %d against %d probes: Fisher's exact p (two-sided) = %s for runs with a probe over 1 s, %s for runs with a full worker\n",
			c.A.Server, c.A.Hold, c.A.Probes, c.B.Probes, pValue(c.POver1s), pValue(c.PFullRuns))
	}
}

func pValue(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3f", p)
}
