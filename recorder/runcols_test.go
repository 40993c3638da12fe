package recorder

import (
	"testing"
)

// TestSummarizeFast: counts summed, p50 and p95 the medians of the runs'
// measured values, p95's range; a run without /fast measured counts its
// requests but no latency, and no run at all measures nothing.
func TestSummarizeFast(t *testing.T) {
	type run struct {
		planned, sent, total, ok int
		p50, p95, max            Maybe
	}
	of := func(r *run) FastRun {
		return FastRun{Planned: &r.planned, Sent: &r.sent, Total: &r.total, OK: &r.ok, P50: &r.p50, P95: &r.p95, Max: &r.max}
	}
	runs := []run{
		{planned: 72, ok: 72, p50: Some(2), p95: Some(40)},
		{planned: 72, ok: 70, p50: Some(4), p95: Some(10)},
		{planned: 72, ok: 0},
		{planned: 72, ok: 71, p50: Some(3), p95: Some(3000)},
	}
	got := SummarizeFast(runs, of)
	want := FastOver{FastPlanned: 288, FastOK: 213, P50MS: Some(3), P95MS: Some(40), P95MinMS: Some(10), P95MaxMS: Some(3000)}
	if got != want {
		t.Errorf("SummarizeFast = %+v, want %+v", got, want)
	}
	if none := SummarizeFast([]run(nil), of); none != (FastOver{}) {
		t.Errorf("no runs: %+v, want nothing measured", none)
	}
}
