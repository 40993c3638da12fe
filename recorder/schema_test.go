package recorder

import (
	"slices"
	"strings"
	"testing"
)

// The CSV contract: the first columns of each file, with the columns added since
// (large-responses.csv outcome, runs.csv fast_planned and fast_sent,
// conditions.csv runs_excluded: see recorder/doc.go).
const (
	designRequests        = "run_id, route, server, slow_clients, rep, seq, scheduled_s, start_s, schedule_lag_ms, connect_ms, ttfb_ms, latency_ms, status, bytes, error, shard, protocol, conn, stream"
	designLargeResponses  = "run_id, route, server, slow_clients, rep, client, status, bytes, receive_s, app_send_s, complete, outcome, error"
	designResourceSamples = "run_id, t_s, component, cpu_seconds, throttled_periods, throttled_s, memory_bytes, rss_bytes, processes, temp_files, temp_logical_bytes, temp_allocated_bytes, send_queue_bytes, error, open_fds, established, quiet_clients"
	designRuns            = "run_id, route, server, slow_clients, rep, started_at, status, reason, fast_total, fast_ok, fast_planned, fast_sent, p50_ms, p95_ms, max_ms, max_schedule_lag_ms, app_send_s, client_receive_s, temp_peak_mib"
	designRunComponent    = "c_cpu_cores, c_throttled_ms, c_memory_peak_bytes, c_rss_peak_bytes"
	designConditions      = "route, server, slow_clients, runs, runs_excluded, p50_ms, p95_ms, p95_min_ms, p95_max_ms, app_send_s, client_receive_s, temp_peak_mib, app_memory_peak_mib, proxy_memory_peak_mib"
)

func designColumns(s string) []string { return strings.Split(s, ", ") }

func TestHeaderMatchesDesign(t *testing.T) {
	runs := designColumns(designRuns)
	for _, c := range []string{"app", "proxy", "loadgen"} {
		for _, col := range designColumns(designRunComponent) {
			runs = append(runs, c+strings.TrimPrefix(col, "c"))
		}
	}
	runs = append(runs, "app_oom_kills", "proxy_oom_kills", "loadgen_oom_kills")
	tests := []struct {
		file   string
		header []string
		design []string
	}{
		{FileName[Request](), Header[Request](), designColumns(designRequests)},
		{FileName[LargeResponse](), Header[LargeResponse](), designColumns(designLargeResponses)},
		{FileName[ResourceSample](), Header[ResourceSample](), designColumns(designResourceSamples)},
		{FileName[Run](), Header[Run](), runs},
		{FileName[Condition](), Header[Condition](), designColumns(designConditions)},
	}
	wantFiles := []string{"requests.csv", "large-responses.csv", "resource-samples.csv", "runs.csv", "conditions.csv"}
	for i, tt := range tests {
		if tt.file != wantFiles[i] {
			t.Errorf("FileName = %q, want %q", tt.file, wantFiles[i])
		}
		if !slices.Equal(tt.header, tt.design) {
			t.Errorf("%s header\n got: %s\nwant: %s", tt.file, strings.Join(tt.header, ", "), strings.Join(tt.design, ", "))
		}
	}
	if got := len(Header[Run]()); got != 34 {
		t.Errorf("runs.csv has %d columns, want 34", got)
	}
}

func TestHeaderReturnsCopy(t *testing.T) {
	h := Header[Request]()
	h[0] = "mangled"
	if Header[Request]()[0] != "run_id" {
		t.Fatal("Header exposes the schema's own slice")
	}
}
