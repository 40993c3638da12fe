package recorder

import (
	"testing"
)

// The run rows that take their status and /fast columns from StatusCols
// and FastCols keep every column's name, place and precision (the layouts
// are 33ab07f's, before the shared columns were written once).
func TestSharedRunColumnsKeepLayout(t *testing.T) {
	for file, got := range map[string]string{
		FileName[TempRun](): Layout[TempRun](),
	} {
		if want := published[file]; got != want {
			t.Errorf("%s:\n got %s\nwant %s", file, got, want)
		}
	}
}

var published = map[string]string{
	"temp-runs.csv": "run_id/0 route/0 server/0 slow_clients/0 rep/0 size_bytes/0 max_temp_file_bytes/0 temp_tmpfs_bytes/0 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 app_send_s/3 receive_s/3 downloads_complete/0 downloads_cut/0 bytes_min/0 temp_peak_mib/3 temp_fs_avail_min_mib/3 proxy_errors/0 app_mem_mib/3 proxy_mem_mib/3 exporter_temp_write_errors/0",
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
