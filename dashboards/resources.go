package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// The exporter panels both dashboards show. s is the inside of the label
// selector that picks the groups (and, in production, the instances).

func cpuPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("CPU cores used vs limit", unitCores,
		"CPU time per second of each group: the cgroup's counter where the group has a cgroup, else the sum over its processes. "+
			"The limit is the cgroup's CPU quota (cpu.max / cfs_quota_us over the period); a group pinned at its limit is throttled.",
		query(fmt.Sprintf("sum by (group) (rate(slowlab_cgroup_cpu_usage_seconds_total{%[1]s}[$__rate_interval]))"+
			" or sum by (group) (rate(slowlab_process_cpu_seconds_total{%[1]s}[$__rate_interval]))", s), "{{group}} used"),
		query(fmt.Sprintf("sum by (group) (slowlab_cgroup_cpu_limit_cores{%s})", s), "{{group}} limit"))
}

func throttledPanel(s string) *timeseries.PanelBuilder {
	return ratioSeries("CPU throttled periods",
		"Share of CFS periods in which the group ran out of quota and was held back. "+
			"Latency inside a throttled group grows by up to one period (often 100 ms; 10 ms in the lab) per throttled period. Alert: SlowlabCPUThrottlingHigh.",
		query(fmt.Sprintf("sum by (group) (rate(slowlab_cgroup_cpu_throttled_periods_total{%[1]s}[$__rate_interval]))"+
			" / sum by (group) (rate(slowlab_cgroup_cpu_periods_total{%[1]s}[$__rate_interval]))", s), "{{group}}"))
}

func memoryPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Memory vs limit", units.BytesIEC,
		"cgroup memory use (page cache included, which the kernel reclaims near the limit), its peak, and the limit (memory.max). Alert: SlowlabMemoryNearLimit.",
		query(fmt.Sprintf("sum by (group) (slowlab_cgroup_memory_usage_bytes{%s})", s), "{{group}} usage"),
		query(fmt.Sprintf("sum by (group) (slowlab_cgroup_memory_peak_bytes{%s})", s), "{{group}} peak"),
		query(fmt.Sprintf("sum by (group) (slowlab_cgroup_memory_limit_bytes{%s})", s), "{{group}} limit"))
}

func oomPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("OOM kills", units.Short,
		"Processes the kernel killed because the group's cgroup reached its memory limit, in each interval (SlowlabOOMKill). "+
			"An async server that writes without waiting for slow clients holds each of their responses in memory and ends here.",
		query(fmt.Sprintf("sum by (group) (increase(slowlab_cgroup_oom_kills_total{%s}[$__rate_interval]))", s), "{{group}}"))
}

func rssPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Resident memory (RSS)", units.BytesIEC,
		"RSS summed over each group's processes (pages shared between a master and its workers count once per process).",
		query(fmt.Sprintf("sum by (group) (slowlab_process_resident_memory_bytes{%s})", s), "{{group}}"))
}

func tempBytesPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Proxy temp file bytes", units.BytesIEC,
		"Responses a buffering proxy spooled to disk for slow clients: logical size (st_size) and disk actually allocated, over open temp files including unlinked ones. "+
			"NGINX stops spooling a response at proxy_max_temp_file_size (32 MiB per request in the lab) and then relays at the client's pace again. Alert: SlowlabProxyTempFilesNearMax.",
		query(fmt.Sprintf("sum by (group) (slowlab_proxy_temp_logical_bytes{%s})", s), "{{group}} logical"),
		query(fmt.Sprintf("sum by (group) (slowlab_proxy_temp_allocated_bytes{%s})", s), "{{group}} allocated"))
}

func tempFilesPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Proxy temp files open", units.Short,
		"Temp files the group's processes hold open under its temp dirs: about one per response being spooled.",
		query(fmt.Sprintf("sum by (group) (slowlab_proxy_temp_files{%s})", s), "{{group}}"))
}

func tempWriteErrorsPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Proxy temp write failures", units.Short,
		"Failed temp-file writes in the proxy's error log in each interval (No space left on device, or a short write, under the group's temp dirs; "+
			"read from the error_logs the group names): each is a buffered response cut, a 200 with a short body. A burst fills a small temp filesystem "+
			"and is freed in milliseconds, between scrapes of the free-space gauge; this count does not miss it. Alert: SlowlabProxyTempWriteFailed.",
		query(fmt.Sprintf("sum by (group) (increase(slowlab_proxy_temp_write_errors_total{%s}[$__rate_interval]))", s), "{{group}}"))
}

func sendQueuePanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Socket send-queue bytes", units.BytesIEC,
		"Bytes written into the groups' TCP sockets and not yet acknowledged by the peer, by side (accepted: to the group's clients; connected: to its upstreams); not-sent is the part the peer's closed window never let out. "+
			"A worker writing to a slow reader fills this, then blocks (wait channel sk_stream_wait_memory). Behind a proxy with buffering off, the proxy's accepted-side queue is where a slow client's response waits, up to the kernel's tcp_wmem maximum per socket: "+
			"while the response fits there the app is released, once it does not the app is held again.",
		query(fmt.Sprintf("sum by (group, side) (slowlab_socket_send_queue_bytes{%s})", s), "{{group}} {{side}} send queue"),
		query(fmt.Sprintf("sum by (group, side) (slowlab_socket_notsent_bytes{%s})", s), "{{group}} {{side}} not sent"))
}

func waitStatesPanel(s string) *timeseries.PanelBuilder {
	return stackedSeries("Worker wait states", units.Short,
		"Sleeping processes of each group by kernel wait channel. sk_stream_wait_memory is a write waiting for send-buffer space: "+
			"a synchronous worker stuck serving a slow reader. When it reaches the number of workers, no worker is left for other requests (SlowlabWorkersSaturated).",
		query(fmt.Sprintf("sum by (group, wchan) (slowlab_process_wchan{%s})", s), "{{group}} {{wchan}}"))
}

// heldMemoryPanel is where a group keeps the responses its clients have
// not read: its memory, its temp files, its sockets.
func heldMemoryPanel(s string) *timeseries.PanelBuilder {
	return timeSeries("Slow responses: memory, disk, sockets", units.BytesIEC,
		"Where each group keeps responses its clients have not read yet: resident memory above its lowest of the last hour "+
			"(a proxy that buffers responses in memory: Caddy's buffer_responses, Apache's ProxyIOBufferSize), the bytes of its open temp files "+
			"(NGINX spools there; their page cache is in the cgroup's memory, not in RSS), and what its clients' closed windows keep unsent in its send queues. "+
			"Memory that climbs with the slow clients while no temp file opens is the proxy holding whole responses for them, each slow client one more (SlowlabResponsesHeldInMemory).",
		query(fmt.Sprintf("sum by (group) (slowlab_process_resident_memory_bytes{%[1]s} - min_over_time(slowlab_process_resident_memory_bytes{%[1]s}[1h]))", s), "{{group}} memory held"),
		query(fmt.Sprintf("sum by (group) (slowlab_proxy_temp_logical_bytes{%s})", s), "{{group}} temp files"),
		query(fmt.Sprintf(`sum by (group) (slowlab_socket_notsent_bytes{side="accepted", %s})`, s), "{{group}} not sent to clients"))
}
