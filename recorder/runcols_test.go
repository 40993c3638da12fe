package recorder

import (
	"testing"
)

// TestSummarizeFast: counts summed, p50 and p95 the medians of the runs'
// measured values, p95's range; a run without /fast measured counts its
// requests but no latency, and no run at all measures nothing.
func TestSummarizeFast(t *testing.T) {
	type run struct{ FastFields }
	fast := func(planned, ok int, p50, p95 Maybe) run {
		return run{FastFields{FastPlanned: planned, FastOK: ok, P50MS: p50, P95MS: p95}}
	}
	runs := []run{
		fast(72, 72, Some(2), Some(40)),
		fast(72, 70, Some(4), Some(10)),
		fast(72, 0, None(), None()),
		fast(72, 71, Some(3), Some(3000)),
	}
	got := SummarizeFast(runs)
	want := FastOver{FastPlanned: 288, FastOK: 213, P50MS: Some(3), P95MS: Some(40), P95MinMS: Some(10), P95MaxMS: Some(3000)}
	if got != want {
		t.Errorf("SummarizeFast = %+v, want %+v", got, want)
	}
	if none := SummarizeFast([]run(nil)); none != (FastOver{}) {
		t.Errorf("no runs: %+v, want nothing measured", none)
	}
}
