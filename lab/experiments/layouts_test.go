package experiments

import (
	"testing"

	"github.com/slowlab/slowlab/lab/buffersweep"
	"github.com/slowlab/slowlab/lab/h2slowclient"
	"github.com/slowlab/slowlab/lab/idleconn"
	"github.com/slowlab/slowlab/lab/latencygap"
	"github.com/slowlab/slowlab/lab/longpoll"
	"github.com/slowlab/slowlab/lab/slowupload"
	"github.com/slowlab/slowlab/lab/sse"
	"github.com/slowlab/slowlab/lab/stalledreader"
	"github.com/slowlab/slowlab/lab/tempcliff"
	"github.com/slowlab/slowlab/lab/websocket"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// contract is what a results file promises its readers: its name, its
// columns with their precision, and the defaults of columns added later.
type contract struct{ file, layout, added string }

func contractOf[T recorder.Row[T]]() contract {
	return contract{recorder.FileName[T](), recordertest.Layout[T](), recordertest.AddedColumns[T]()}
}

// layouts are every row type's contract as declared with recorder.Col
// before the rows declared their columns in struct tags (main 876fc27),
// and latency-gap's as its A and AAAA lookups added columns to them.
var layouts = []contract{
	{"requests.csv",
		"run_id/0 route/0 server/0 slow_clients/0 rep/0 seq/0 scheduled_s/3 start_s/3 schedule_lag_ms/3 connect_ms/3 ttfb_ms/3 latency_ms/3 status/0 bytes/0 error/0 shard/0 protocol/0 conn/0 stream/0",
		""},
	{"runs.csv",
		"run_id/0 route/0 server/0 slow_clients/0 rep/0 started_at/0 status/0 reason/0 fast_total/0 fast_ok/0 fast_planned/0 fast_sent/0 p50_ms/3 p95_ms/3 max_ms/3 max_schedule_lag_ms/3 app_send_s/3 client_receive_s/3 temp_peak_mib/3 app_cpu_cores/3 app_throttled_ms/3 app_memory_peak_bytes/0 app_rss_peak_bytes/0 proxy_cpu_cores/3 proxy_throttled_ms/3 proxy_memory_peak_bytes/0 proxy_rss_peak_bytes/0 loadgen_cpu_cores/3 loadgen_throttled_ms/3 loadgen_memory_peak_bytes/0 loadgen_rss_peak_bytes/0 app_oom_kills/0 proxy_oom_kills/0 loadgen_oom_kills/0",
		""},
	{"conditions.csv",
		"route/0 server/0 slow_clients/0 runs/0 runs_excluded/0 p50_ms/3 p95_ms/3 p95_min_ms/3 p95_max_ms/3 app_send_s/3 client_receive_s/3 temp_peak_mib/3 app_memory_peak_mib/3 proxy_memory_peak_mib/3",
		""},
	{"hops.csv",
		"run_id/0 t_s/3 download/0 hop/0 bytes/0 source/0",
		""},
	{"large-responses.csv",
		"run_id/0 route/0 server/0 slow_clients/0 rep/0 client/0 status/0 bytes/0 receive_s/3 app_send_s/3 complete/0 outcome/0 error/0",
		""},
	{"resource-samples.csv",
		"run_id/0 t_s/3 component/0 cpu_seconds/6 throttled_periods/0 throttled_s/6 memory_bytes/0 rss_bytes/0 processes/0 temp_files/0 temp_logical_bytes/0 temp_allocated_bytes/0 send_queue_bytes/0 error/0 open_fds/0 established/0 quiet_clients/0",
		""},
	{"sweep.csv",
		"kernel/0 tcp_wmem/0 tcp_rmem/0 route/0 server/0 slow_clients/0 size_bytes/0 rate_bps/0 runs/0 runs_ok/0 fast_p95_ms/3 app_send_s/3 client_receive_s/3 capacity_bytes/0 predicted_app_send_s/3 prediction_error_pct/1 wake_step_bytes/0 dir/0 capacity_predicted_bytes/0 capacity_measured_bytes/0 app_send_predicted_s/3 app_send_measured_s/3",
		""},
	{"h2-streams.csv",
		"run_id/0 route/0 protocol/0 server/0 streams/0 rep/0 stream/0 conn/0 status/0 bytes/0 first_byte_ms/3 total_s/3 outcome/0 app_held/0 error/0",
		"protocol=h2"},
	{"h2-runs.csv",
		"run_id/0 route/0 protocol/0 server/0 streams/0 rep/0 conns/0 fast_conn/0 read/0 stream_window/0 conn_window/0 started_at/0 status/0 reason/0 complete/0 cut/0 reset/0 failed/0 reset_after_s/3 workers/0 app_held_max/0 app_complete/0 proxy_mem_peak_mib/3 temp_peak_mib/3 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3",
		"protocol=h2"},
	{"idle-conns.csv",
		"run_id/0 route/0 server/0 mode/0 conns/0 seq/0 source/0 start_s/3 connect_ms/3 held_s/3 end/0 sent_bytes/0 received_bytes/0 first_line/0 error/0",
		""},
	{"idle-runs.csv",
		"run_id/0 route/0 server/0 mode/0 conns/0 rep/0 status/0 reason/0 connected/0 connect_errors/0 fin/0 reset/0 bound/0 responded/0 server_closed_p50_s/3 server_closed_max_s/3 bound_s/3 app_timeout_s/3 header_timeout_s/3 fast_sent/0 fast_ok/0 fast_p50_ms/3 fast_p95_ms/3 app_mem_mib/3 app_rss_mib/3 proxy_mem_mib/3 proxy_rss_mib/3 app_fds_peak/0 app_established_peak/0 proxy_fds_peak/0 proxy_established_peak/0",
		""},
	{"gap.csv",
		"size_bytes/0 configured_rtt_ms/3 rtt_ms/3 server_ms/3 client_keepalive_ms/3 client_new_ms/3 server_blind_pct/3 runs/0 delay_method/0 server_last_byte_ms/3 server_last_byte_blind_pct/3 tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0 handshake_ms/3 resumed_pct/3 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 dns_ms/3 connect_ms/3 ipv6_pct/3 run_id/0",
		"dns_families= dns_aaaa_delay_ms=0 connect_ms= ipv6_pct="},
	{"gap-requests.csv",
		"size_bytes/0 configured_rtt_ms/3 delay_method/0 mode/0 seq/0 start_s/6 new_conn/0 connect_ms/3 ttfb_ms/3 total_ms/3 server_header_ms/3 server_last_byte_ms/3 tcp_rtt_ms/3 status/0 bytes/0 error/0 tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0 handshake_ms/3 tls_resumed/0 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 dns_ms/3 family/0 run_id/0",
		"dns_families= dns_aaaa_delay_ms=0 family="},
	{"gap-path.csv",
		"size_bytes/0 configured_rtt_ms/3 rtt_ms/3 delay_method/0 mtu/0 congestion_control/0 packets/0 dropped/0 lateness_p50_ms/3 lateness_p99_ms/3 lateness_max_ms/3 valid/0 tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0 path_packets/0 loss_applied_pct/3 overflow_drops/0 sent_packets/0 received_packets/0 loss_measured_pct/3 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 run_id/0",
		"dns_families= dns_aaaa_delay_ms=0"},
	{"gap-runs.csv",
		"run_id/0 status/0 reason/0",
		""},
	{"gap-page-requests.csv",
		"run_id/0 kind/0 mode/0 protocol/0 redirects/0 redirect_origin/0 resources/0 size_bytes/0 configured_rtt_ms/3 load/0 hop/0 role/0 origin/0 status/0 proto/0 new_conn/0 start_ms/3 dns_ms/3 connect_ms/3 tls_ms/3 wait_ms/3 ttfb_ms/3 total_ms/3 end_ms/3 server_ms/3 server_last_byte_ms/3 bytes/0 error/0 tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 family/0",
		"dns_families= dns_aaaa_delay_ms=0 family="},
	{"gap-page-loads.csv",
		"run_id/0 kind/0 mode/0 protocol/0 redirects/0 redirect_origin/0 resources/0 size_bytes/0 configured_rtt_ms/3 load/0 requests/0 connections/0 load_ms/3 server_sum_ms/3 server_max_ms/3 visible_pct/3 visible_max_pct/3 bound_ms/3 error/0 tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3",
		"dns_families= dns_aaaa_delay_ms=0"},
	{"gap-pages.csv",
		"run_id/0 kind/0 mode/0 protocol/0 redirects/0 redirect_origin/0 resources/0 size_bytes/0 configured_rtt_ms/3 delay_method/0 lateness_p99_ms/3 lateness_max_ms/3 valid/0 loads/0 load_ms/3 server_sum_ms/3 server_max_ms/3 visible_pct/3 visible_max_pct/3 connections/1 bound_ms/3 tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3",
		"dns_families= dns_aaaa_delay_ms=0"},
	{"probes.csv",
		"run_id/0 server/0 hold/0 probe_concurrency/0 worker/0 seq/0 start_s/3 connect_ms/3 ttfb_ms/3 latency_ms/3 status/0 bytes/0 error/0",
		""},
	{"groups.csv",
		"run_id/0 server/0 hold/0 probe_concurrency/0 seconds/3 elapsed_s/3 ok/0 failed/0 p50_ms/3 p95_ms/3 max_ms/3 throughput_rps/3 slots/0 free_slots/0 max_worker_held/0 full_worker_s/3 probes_over_1s/0 held_samples/0 waves/0 full_waves/0 worker_slots/0 full_samples/0",
		""},
	{"longpoll-runs.csv",
		"run_id/0 server/0 hold/0 probe_concurrency/0 rep/0 started_at/0 status/0 reason/0 probes/0",
		""},
	{"uploads.csv",
		"run_id/0 route/0 server/0 uploaders/0 rep/0 client/0 size_bytes/0 rate_bps/0 app_timeout_s/3 start_s/3 send_s/3 total_s/3 sent_bytes/0 status/0 app_read_s/3 app_bytes/0 outcome/0 error/0",
		""},
	{"upload-runs.csv",
		"run_id/0 route/0 server/0 uploaders/0 rep/0 size_bytes/0 rate_bps/0 app_timeout_s/3 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 send_s/3 app_read_s/3 uploads_ok/0 uploads_5xx/0 uploads_reset/0 uploads_timeout/0 uploads_other/0 worker_timeouts/0 temp_peak_mib/3 app_mem_mib/3 proxy_mem_mib/3",
		""},
	{"sse-events.csv",
		"run_id/0 route/0 server/0 streams/0 rep/0 client/0 seq/0 sent_s/6 received_s/6 delay_ms/3",
		""},
	{"sse-streams.csv",
		"run_id/0 route/0 server/0 streams/0 rep/0 client/0 start_s/3 first_byte_ms/3 status/0 events/0 events_expected/0 delay_p50_ms/3 delay_p95_ms/3 delay_max_ms/3 outcome/0 error/0",
		""},
	{"sse-runs.csv",
		"run_id/0 route/0 server/0 streams/0 rep/0 interval_s/3 duration_s/3 started_at/0 status/0 reason/0 events_expected/0 events/0 streams_complete/0 delay_p50_ms/3 delay_p95_ms/3 delay_max_ms/3 first_byte_ms/3 slots/0 workers/0 held_max/0 workers_holding_max/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3",
		""},
	{"stalled-downloads.csv",
		"run_id/0 route/0 server/0 mode/0 clients/0 rep/0 client/0 size_bytes/0 rate_bps/0 app_timeout_s/3 send_timeout_s/3 stall_s/3 give_up_s/3 start_s/3 stalled_s/3 resumed_s/3 last_byte_s/3 end_s/3 stall_bytes/0 bytes/0 content_length/0 status/0 app_send_s/3 outcome/0 ended_by/0 error/0",
		""},
	{"stalled-runs.csv",
		"run_id/0 route/0 server/0 mode/0 clients/0 rep/0 size_bytes/0 rate_bps/0 app_timeout_s/3 send_timeout_s/3 stall_s/3 give_up_s/3 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 complete/0 truncated/0 reset/0 timeout/0 other/0 by_client/0 by_app_timeout/0 by_send_timeout/0 by_unknown/0 bytes_median/0 worker_timeouts/0 app_held_s/3",
		""},
	{"temp-runs.csv",
		"run_id/0 route/0 server/0 slow_clients/0 rep/0 size_bytes/0 max_temp_file_bytes/0 temp_tmpfs_bytes/0 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 app_send_s/3 receive_s/3 downloads_complete/0 downloads_cut/0 bytes_min/0 temp_peak_mib/3 temp_fs_avail_min_mib/3 proxy_errors/0 app_mem_mib/3 proxy_mem_mib/3 exporter_temp_write_errors/0",
		""},
	{"ws-sessions.csv",
		"run_id/0 route/0 server/0 sockets/0 rep/0 client/0 start_s/3 handshake_ms/3 status/0 held_s/3 end/0 close_code/0 pings/0 pongs/0 messages/0 bytes/0 delay_p95_ms/3 error/0",
		""},
	{"ws-runs.csv",
		"run_id/0 route/0 server/0 sockets/0 rep/0 mode/0 queue/0 hold_s/3 ping_s/3 read_timeout_s/3 started_at/0 status/0 reason/0 opened/0 held/0 refused/0 handshake_p95_ms/3 lifetime_p50_s/3 messages/0 delay_p95_ms/3 app_mem_peak_mib/3 app_rss_peak_mib/3 app_oom_kills/0 slots/0 workers/0 held_max/0 workers_holding_max/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3",
		""},
}

// checked are the contracts of every row type, in the order of layouts.
func checked() []contract {
	return []contract{
		contractOf[recorder.Request](),
		contractOf[recorder.Run](),
		contractOf[recorder.Condition](),
		contractOf[recorder.Hop](),
		contractOf[recorder.LargeResponse](),
		contractOf[recorder.ResourceSample](),
		contractOf[buffersweep.Cell](),
		contractOf[h2slowclient.Stream](),
		contractOf[h2slowclient.RunRow](),
		contractOf[idleconn.Conn](),
		contractOf[idleconn.RunRow](),
		contractOf[latencygap.Gap](),
		contractOf[latencygap.Request](),
		contractOf[latencygap.Path](),
		contractOf[latencygap.RunRow](),
		contractOf[latencygap.Fetch](),
		contractOf[latencygap.Load](),
		contractOf[latencygap.Page](),
		contractOf[longpoll.Probe](),
		contractOf[longpoll.Group](),
		contractOf[longpoll.RunRow](),
		contractOf[slowupload.Upload](),
		contractOf[slowupload.RunRow](),
		contractOf[sse.Event](),
		contractOf[sse.Stream](),
		contractOf[sse.RunRow](),
		contractOf[stalledreader.Download](),
		contractOf[stalledreader.RunRow](),
		contractOf[tempcliff.RunRow](),
		contractOf[websocket.Session](),
		contractOf[websocket.RunRow](),
	}
}

// TestLayoutsKept: every results file keeps the columns, precisions and
// added defaults it had when its columns were declared with Col lines.
func TestLayoutsKept(t *testing.T) {
	got := checked()
	if len(got) != len(layouts) {
		t.Fatalf("%d row types checked, %d golden layouts", len(got), len(layouts))
	}
	for i, want := range layouts {
		if got[i] != want {
			t.Errorf("%s:\n got %+v\nwant %+v", want.file, got[i], want)
		}
	}
}
