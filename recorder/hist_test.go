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

// A long-poll run's summary, streamed probe by probe, agrees with the
// nearest-rank percentiles of all its latencies kept (within the
// histogram's 1/2048; the maximum exactly) and counts what SummarizeProbes
// counted.
func TestProbeSummaryMatchesNearestRank(t *testing.T) {
	var s ProbeSummary
	var lat []float64
	for i := range 5000 {
		p := Probe{Status: 200, LatencyMS: 0.2 + float64((i*7919)%5000)*0.731}
		if i%97 == 0 {
			p = Probe{Status: 0, Error: "timeout", LatencyMS: 5000}
		} else {
			lat = append(lat, p.LatencyMS)
		}
		s.Add(p)
	}
	g := s.Group(LongPollGroup{ElapsedS: 10})
	if g.OK != len(lat) || g.Failed != 5000-len(lat) {
		t.Errorf("ok %d failed %d, want %d and %d", g.OK, g.Failed, len(lat), 5000-len(lat))
	}
	for _, c := range []struct {
		got Maybe
		p   float64
	}{{g.P50MS, 50}, {g.P95MS, 95}} {
		want := NearestRank(lat, c.p)
		if math.Abs(c.got.Value-want)/want > 1.0/2048 {
			t.Errorf("p%v %v ms, want %v within 1/2048", c.p, c.got.Value, want)
		}
	}
	if want := NearestRank(lat, 100); math.Abs(g.MaxMS.Value-want) > 1e-6 {
		t.Errorf("max %v ms, want %v", g.MaxMS.Value, want)
	}
	if want := float64(len(lat)) / 10; g.ThroughputRPS != want {
		t.Errorf("throughput %v, want %v", g.ThroughputRPS, want)
	}
}
