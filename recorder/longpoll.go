package recorder

import (
	"math"
	"slices"
	"strconv"
)

// CountWaves groups the times the holders issued their long-polls
// (seconds, any order) into waves: issues less than gap apart belong to
// one wave. It returns how many waves were in effect during the window
// [from, to) (a wave lasts until the next one starts) and in how many of
// those a worker was sampled full (fullAt: the times of such samples).
func CountWaves(issues, fullAt []float64, from, to, gap float64) (waves, full int) {
	t := slices.Clone(issues)
	slices.Sort(t)
	var starts []float64
	for i, v := range t {
		if i == 0 || v-t[i-1] >= gap {
			starts = append(starts, v)
		}
	}
	for i, start := range starts {
		end := math.Inf(1)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if end <= from || start >= to {
			continue
		}
		waves++
		for _, f := range fullAt {
			if f >= start && f < end && f >= from && f < to {
				full++
				break
			}
		}
	}
	return waves, full
}

// FisherExact returns the two-sided p-value of Fisher's exact test for the
// 2x2 table [[a, b], [c, d]]: the probability, with the margins fixed, of
// a table at most as likely as this one. Long-poll uses it to compare how
// often a condition's runs had an outcome (a worker full, a probe over
// 1 s) against another condition's. It returns NaN for an empty table.
func FisherExact(a, b, c, d int) float64 {
	if a < 0 || b < 0 || c < 0 || d < 0 || a+b+c+d == 0 {
		return math.NaN()
	}
	row1, col1, n := a+b, a+c, a+b+c+d
	lp := func(x int) float64 { // log P(table with top-left x)
		return lchoose(row1, x) + lchoose(n-row1, col1-x) - lchoose(n, col1)
	}
	observed := lp(a)
	p := 0.0
	for x := max(0, col1-(n-row1)); x <= min(row1, col1); x++ {
		if l := lp(x); l <= observed+1e-7 {
			p += math.Exp(l)
		}
	}
	return math.Min(1, p)
}

// lchoose is log(n choose k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// LongPollSummary is one long-poll condition over its runs (repetitions):
// in how many runs some worker was full, and in how many a probe took
// over a second, with the issue waves of all its runs.
type LongPollSummary struct {
	Server            string
	Hold, Probes      int
	Runs              int
	RunsFull          int // runs in which a worker was sampled full
	RunsOver1s        int // runs with a probe slower than 1 s
	Waves, FullWaves  int // summed over the runs that counted them
	Sampled, Counted  int // runs that sampled held long-polls, runs that counted waves
	ProbesOK, Elapsed float64
}

// SummarizeLongPoll groups a long-poll experiment's runs by condition
// (server, hold, probes), in order of first appearance.
func SummarizeLongPoll(groups []LongPollGroup) []LongPollSummary {
	var out []LongPollSummary
	idx := map[[3]string]int{}
	for _, g := range groups {
		k := [3]string{g.Server, strconv.Itoa(g.Hold), strconv.Itoa(g.ProbeConcurrency)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, LongPollSummary{Server: g.Server, Hold: g.Hold, Probes: g.ProbeConcurrency})
		}
		s := &out[i]
		s.Runs++
		s.ProbesOK += float64(g.OK)
		s.Elapsed += g.ElapsedS
		if g.ProbesOver1s > 0 {
			s.RunsOver1s++
		}
		if g.FullWorkerS.Valid {
			s.Sampled++
			if g.FullWorkerS.Value > 0 {
				s.RunsFull++
			}
		}
		if g.Waves.Valid && g.FullWaves.Valid {
			s.Counted++
			s.Waves += int(g.Waves.Value)
			s.FullWaves += int(g.FullWaves.Value)
		}
	}
	return out
}

// LongPollComparison tests whether two conditions that differ only in
// their probe count differ in how often a run had a probe over 1 s, and in
// how often a worker was full (Fisher's exact test, two-sided).
type LongPollComparison struct {
	A, B               LongPollSummary
	POver1s, PFullRuns float64 // NaN when not computable
}

// CompareLongPoll pairs the conditions that share a server and a hold
// count and differ in probes, each with at least two runs.
func CompareLongPoll(sums []LongPollSummary) []LongPollComparison {
	var out []LongPollComparison
	for i, a := range sums {
		for _, b := range sums[i+1:] {
			if a.Server != b.Server || a.Hold != b.Hold || a.Probes == b.Probes || a.Runs < 2 || b.Runs < 2 {
				continue
			}
			c := LongPollComparison{A: a, B: b, PFullRuns: math.NaN(),
				POver1s: FisherExact(a.RunsOver1s, a.Runs-a.RunsOver1s, b.RunsOver1s, b.Runs-b.RunsOver1s)}
			if a.Sampled > 0 && b.Sampled > 0 {
				c.PFullRuns = FisherExact(a.RunsFull, a.Sampled-a.RunsFull, b.RunsFull, b.Sampled-b.RunsFull)
			}
			out = append(out, c)
		}
	}
	return out
}
