package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// ExperimentUID is the Experiment dashboard's stable uid.
const ExperimentUID = "slowlab-experiment"

// Label selectors of the Experiment dashboard.
var (
	runs       = `run_id=~"$run_id"`
	fast       = sel(`role="fast"`, runs)
	slow       = sel(`role="slow"`, runs)
	expGroups  = `group=~"$group"`
	durationM  = "slowlab_loadgen_request_duration_seconds"
	lagM       = "slowlab_loadgen_schedule_lag_seconds"
	connectM   = "slowlab_loadgen_connect_duration_seconds"
	ttfbM      = "slowlab_loadgen_ttfb_seconds"
	serverTime = "slowlab_loadgen_server_timing_seconds"
)

// Experiment is "slowlab / Experiment": what a run of `slowlab reproduce`
// or `slowlab loadgen` did to fast requests, next to the resources of the
// app, proxy and loadgen groups.
func Experiment() (dashboard.Dashboard, error) {
	b := newDashboard(ExperimentUID, "slowlab / Experiment",
		"Fast-request latency under slow readers, long-polls or added delay, with the cgroup, process, socket and proxy-temp-file metrics of each group. "+
			"Needs the loadgen's /metrics (--metrics-addr) and the exporter in one Prometheus.").
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("run_id", "run_id", "slowlab_loadgen_in_flight",
			"Load generator run (one per condition and repetition in `slowlab reproduce`).")).
		WithVariable(labelVariable("group", "group", "slowlab_processes",
			"Exporter group: app, proxy, loadgen or your own."))

	b.WithRow(dashboard.NewRowBuilder("Fast requests: what the user waits"))
	b.WithPanel(timeSeries("Fast-request latency p50 / p95 / p99", units.Seconds,
		"Latency of /fast requests (actual start to last body byte) by run. With slow readers holding every synchronous worker, p95 jumps from milliseconds to seconds. "+
			"The baseline is the recording rule SlowlabWorkersSaturated compares against: the lowest fast p95 of the last hour.",
		query(quantile(0.5, durationM, fast, "run_id"), "{{run_id}} p50"),
		// Exemplars: a sampled request's trace, one click from the panel.
		query(quantile(0.95, durationM, fast, "run_id"), "{{run_id}} p95").Exemplar(true),
		query(quantile(0.99, durationM, fast, "run_id"), "{{run_id}} p99"),
		query(`slowlab:loadgen_request_duration_seconds:p95_baseline{role="fast"}`, "p95 baseline (alerts/ rule)")))
	b.WithPanel(bucketHeatmap("Fast-request latency heatmap", units.Seconds,
		"Fast requests per second in each latency bucket, all selected runs together. Two bands (milliseconds and seconds) mean some requests waited for a worker.",
		fmt.Sprintf("sum by (le) (rate(%s_bucket{%s}[$__rate_interval]))", durationM, fast)))
	b.WithPanel(timeSeries("Schedule lag p50 / p99", units.Seconds,
		"How late the open-loop pacer started each fast request against its schedule. It must stay far below the request interval (125 ms): "+
			"a lagging load generator under-reports latency and the run is invalid (SlowlabLoadgenScheduleLagHigh).",
		query(quantile(0.5, lagM, fast, "run_id"), "{{run_id}} p50"),
		query(quantile(0.99, lagM, fast, "run_id"), "{{run_id}} p99")))
	b.WithPanel(timeSeries("TCP connect time p50 / p99", units.Seconds,
		"Connect time of fast requests on new connections. The kernel completes the handshake into the listen backlog even when no worker is free, "+
			"so a saturated sync server shows low connect time and high latency: the wait is after connect.",
		query(quantile(0.5, connectM, fast, "run_id"), "{{run_id}} p50"),
		query(quantile(0.99, connectM, fast, "run_id"), "{{run_id}} p99")))
	b.WithPanel(timeSeries("Server-timing vs client latency (p50)", units.Seconds,
		"Median of what the server says it spent (Server-Timing app;dur) against what the client waited (time to first byte and to the last byte). "+
			"The gap is invisible to server-side timing: handshake, queueing for a worker, network round trips.",
		query(quantile(0.5, serverTime, sel(`role=~"fast|probe"`, runs), "run_id, role"), "{{run_id}} {{role}} server"),
		query(quantile(0.5, ttfbM, sel(`role=~"fast|probe"`, runs), "run_id, role"), "{{run_id}} {{role}} client ttfb"),
		query(quantile(0.5, durationM, sel(`role=~"fast|probe"`, runs), "run_id, role"), "{{run_id}} {{role}} client total").Exemplar(true)))
	b.WithPanel(timeSeries("Request outcomes", units.RequestsPerSecond,
		"Responses per second by role and status code, and failures by reason (timeout, refused, reset, eof, canceled, incomplete, not_sent for scheduled requests the run ended before sending, other). Every fast request should get 200.",
		query(fmt.Sprintf("sum by (role, code) (rate(slowlab_loadgen_requests_total{%s}[$__rate_interval]))", runs), "{{role}} {{code}}"),
		query(fmt.Sprintf("sum by (role, reason) (rate(slowlab_loadgen_request_errors_total{%s}[$__rate_interval]))", runs), "{{role}} error {{reason}}")))

	b.WithRow(dashboard.NewRowBuilder("Slow readers and server slots"))
	b.WithPanel(timeSeries("Slow-reader throughput", units.BytesPerSecondIEC,
		"Body bytes per second the slow readers consumed, by run. The lab paces each reader to about 2 MiB/s, so a 16 MiB download takes about 8 s.",
		query(fmt.Sprintf("sum by (run_id) (rate(slowlab_loadgen_received_bytes_total{%s}[$__rate_interval]))", slow), "{{run_id}}")))
	b.WithPanel(timeSeries("Active slow readers", units.Short,
		"Slow downloads in flight, by run. Each one holds a synchronous worker (direct route) or a proxy connection (buffering on) until it finishes.",
		query(fmt.Sprintf("sum by (run_id) (slowlab_loadgen_in_flight{%s})", slow), "{{run_id}}")))
	b.WithPanel(timeSeries("Busy slots vs slots", units.Short,
		"Embedded target only (scrape its --admin /metrics): requests being worked on, the slot capacity (workers x threads), requests queued for a gthread worker's threads, "+
			"and the most long-polls one worker holds. Busy = slots means the next request waits; so does a request accepted by a worker whose every thread holds a long-poll, "+
			"however many slots the other workers have free.",
		query("sum(slowlab_target_busy_slots)", "busy"),
		query("sum(slowlab_target_slots)", "slots"),
		query("sum(slowlab_target_queued_requests)", "queued"),
		query("max(slowlab_target_longpolls_in_progress)", "most long-polls on one worker")))
	b.WithPanel(waitStatesPanel(expGroups))
	b.WithPanel(timeSeries("Proxy: HTTP/2 streams and WebSocket tunnels", units.Short,
		"Embedded proxy only (scrape its admin /metrics): HTTP/2 streams in progress and WebSocket tunnels open. With buffering off each stream and each tunnel "+
			"is an upstream connection, so one client connection's streams hold as many app workers as it has streams (up to http2_max_concurrent_streams); "+
			"the sockets collector sees the client connections, not the streams (h2-slow-client, websocket).",
		query("sum(slowlab_proxy_http2_streams)", "HTTP/2 streams"),
		query("sum(slowlab_proxy_websockets)", "WebSocket tunnels")))

	b.WithRow(dashboard.NewRowBuilder("Resources per group"))
	b.WithPanel(cpuPanel(expGroups))
	b.WithPanel(throttledPanel(expGroups))
	b.WithPanel(memoryPanel(expGroups))
	b.WithPanel(rssPanel(expGroups))

	b.WithRow(dashboard.NewRowBuilder("Where the response waits"))
	b.WithPanel(tempBytesPanel(expGroups))
	b.WithPanel(sendQueuePanel(expGroups))
	b.WithPanel(heldMemoryPanel(expGroups))
	return finish(b)
}
