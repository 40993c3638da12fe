package longpoll

import (
	"math"
	"slices"
)

// CountWaves groups the times the holders issued their long-polls
// (seconds, any order) into waves: issues less than gap apart belong to
// one wave. It returns how many waves were in effect during the window
// [from, to) (a wave lasts until the next one starts) and in how many of
// those a worker was sampled full (fullAt: the times of such samples).
func CountWaves(issues, fullAt []float64, from, to, gap float64) (waves, full int) {
	t := slices.Sorted(slices.Values(issues))
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
// a table at most as likely as this one. Compare uses it to compare how
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
