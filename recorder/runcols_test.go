package recorder

import (
	"testing"
)

// The run rows that take their status and /fast columns from StatusCols
// and FastCols keep every column's name, place and precision (the layouts
// are 33ab07f's, before the shared columns were written once).
func TestSharedRunColumnsKeepLayout(t *testing.T) {
	for file, got := range map[string]string{
		FileName[StalledRun](): Layout[StalledRun](),
	} {
		if want := published[file]; got != want {
			t.Errorf("%s:\n got %s\nwant %s", file, got, want)
		}
	}
}

var published = map[string]string{
	"stalled-runs.csv": "run_id/0 route/0 server/0 mode/0 clients/0 rep/0 size_bytes/0 rate_bps/0 app_timeout_s/3 send_timeout_s/3 stall_s/3 give_up_s/3 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 complete/0 truncated/0 reset/0 timeout/0 other/0 by_client/0 by_app_timeout/0 by_send_timeout/0 by_unknown/0 bytes_median/0 worker_timeouts/0 app_held_s/3",
}

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
