package recorder

import (
	"math"
	"testing"
	"time"
)

// The summary's percentiles come from a bounded histogram: exact for small
// durations, within 1/2048 above, and bounded memory for any count.
func TestDurationHist(t *testing.T) {
	var h DurationHist
	for i := 1; i <= 1_000_000; i++ {
		h.Add(time.Duration(i) * time.Microsecond) // 1 µs .. 1 s
	}
	for _, p := range []float64{1, 50, 99, 99.9} {
		want := p / 100 * 1000 // ms
		if got := h.Percentile(p); math.Abs(got-want)/want > 1.0/2048 {
			t.Errorf("p%v = %v ms, want %v within 1/2048", p, got, want)
		}
	}
	if got := h.Percentile(100); got != 1000 {
		t.Errorf("max %v ms, want 1000", got)
	}
	if len(h.counts) > 30<<histBits {
		t.Errorf("%d buckets for durations up to 1 s", len(h.counts))
	}
	var small DurationHist
	for _, d := range []time.Duration{500, 700, 900} {
		small.Add(d)
	}
	if got := small.Percentile(50); got != msOf(700) {
		t.Errorf("p50 of 500, 700, 900 ns = %v ms, want exactly 0.0007", got)
	}
	var empty DurationHist
	if !math.IsNaN(empty.Percentile(50)) {
		t.Error("percentile of nothing is not NaN")
	}
}

// Below 2 µs the buckets are exact, so the histogram's percentile must be
// NearestRank's value: the same rank for every count, including a p such
// as 99.9 that float arithmetic does not hold exactly (p/100*1000 is
// 999.0000000000001, one rank too high without Rank's slack).
func TestDurationHistRankIsNearestRank(t *testing.T) {
	for n := 1; n <= 2000; n++ {
		var h DurationHist
		values := make([]float64, n)
		for i := range n {
			h.Add(time.Duration(i + 1))
			values[i] = msOf(time.Duration(i + 1))
		}
		for _, p := range []float64{1, 50, 95, 99, 99.9, 99.99} {
			if got, want := h.Percentile(p), NearestRank(values, p); got != want {
				t.Fatalf("n %d: p%v = %v ms, NearestRank %v ms", n, p, got, want)
			}
		}
	}
}
