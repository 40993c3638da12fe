package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// ProductionUID is the Production dashboard's stable uid.
const ProductionUID = "slowlab-production"

var (
	prodInstances = `instance=~"$instance"`
	prodGroups    = sel(`group=~"$group"`, prodInstances)
)

// Production is "slowlab / Production": the exporter's metrics alone, for
// watching a real app (Gunicorn, NGINX, ...) where no slowlab loadgen runs.
func Production() (dashboard.Dashboard, error) {
	b := newDashboard(ProductionUID, "slowlab / Production",
		"What node_exporter does not show about a pre-fork app behind a proxy: workers stuck writing to slow clients, CPU throttling, "+
			"memory against the cgroup limit, socket queues and the proxy's temp files. Exporter metrics only.").
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("instance", "instance", "slowlab_exporter_collector_success",
			"Exporter instance (one per host).")).
		WithVariable(labelVariable("group", "group", "slowlab_processes",
			"Exporter group as named in its config (app, proxy, ...)."))

	b.WithRow(dashboard.NewRowBuilder("Worker saturation"))
	b.WithPanel(timeSeries("Workers stuck in socket writes", units.Short,
		"Processes blocked writing to a client that reads slowly (wait channel sk_stream_wait_memory) against the group's workers, "+
			"counted as its processes minus one master (at least 1). When the two lines meet, every worker is stuck and other requests queue (SlowlabWorkersSaturated).",
		query(fmt.Sprintf(`sum by (instance, group) (slowlab_process_wchan{wchan="sk_stream_wait_memory", %s})`, prodGroups), "{{instance}} {{group}} stuck writing"),
		query(fmt.Sprintf("clamp_min(sum by (instance, group) (slowlab_processes{%s}) - 1, 1)", prodGroups), "{{instance}} {{group}} workers")))
	b.WithPanel(timeSeries("Workers waiting for clients", units.Short,
		"Processes blocked reading from a client that sends slowly or not at all (wait channel sk_wait_data: a slow upload, an idle or slowloris connection) against the group's workers. "+
			"When the lines meet while the CPU panel is flat, every worker waits for a client and other requests queue (SlowlabWorkersWaitingForClients).",
		query(fmt.Sprintf(`sum by (instance, group) (slowlab_process_wchan{wchan="sk_wait_data", %s})`, prodGroups), "{{instance}} {{group}} waiting for clients"),
		query(fmt.Sprintf("clamp_min(sum by (instance, group) (slowlab_processes{%s}) - 1, 1)", prodGroups), "{{instance}} {{group}} workers")))
	b.WithPanel(waitStatesPanel(prodGroups))
	b.WithPanel(stackedSeries("Processes by state", units.Short,
		"The group's processes by scheduler state; states with no process are hidden. Many in disk_sleep point at I/O, running at CPU.",
		query(fmt.Sprintf("sum by (group, state) (slowlab_processes{%s}) > 0", prodGroups), "{{group}} {{state}}")))
	b.WithPanel(sendQueuePanel(prodGroups))

	b.WithRow(dashboard.NewRowBuilder("CPU and memory"))
	b.WithPanel(cpuPanel(prodGroups))
	b.WithPanel(throttledPanel(prodGroups))
	b.WithPanel(memoryPanel(prodGroups))
	b.WithPanel(rssPanel(prodGroups))
	b.WithPanel(oomPanel(prodGroups))

	b.WithRow(dashboard.NewRowBuilder("Sockets and proxy buffering"))
	b.WithPanel(tempBytesPanel(prodGroups))
	b.WithPanel(tempFilesPanel(prodGroups))
	b.WithPanel(tempWriteErrorsPanel(prodGroups))
	b.WithPanel(heldMemoryPanel(prodGroups))
	b.WithPanel(stackedSeries("TCP sockets by state", units.Short,
		"The group's TCP sockets by state (listening sockets included); states with no socket are hidden. A growing close_wait count is peers that left while the app still holds their sockets: a connection leak (SlowlabCloseWaitGrowing).",
		query(fmt.Sprintf("sum by (group, state) (slowlab_sockets{%s}) > 0", prodGroups), "{{group}} {{state}}")))
	b.WithPanel(timeSeries("Client connections quiet for 60 s", units.Short,
		"The group's client (accepted) connections that have received nothing for 10 s, 60 s and 300 s, against its established connections. "+
			"Requests keep a connection busy; a large quiet share is idle clients holding connections, each one a worker on a sync server (SlowlabIdleConnectionsHigh).",
		query(fmt.Sprintf(`sum by (group, quiet) (slowlab_sockets_quiet{side="accepted", %s})`, prodGroups), "{{group}} quiet {{quiet}}"),
		query(fmt.Sprintf(`sum by (group) (slowlab_sockets{state="established", %s})`, prodGroups), "{{group}} established")))
	b.WithPanel(longLivedPanel(prodGroups))
	b.WithPanel(timeSeries("Accept queue", units.Short,
		"Connections waiting in the accept queue of the group's listening sockets, by port, against the queue's limit; and handshakes dropped because a queue was full (per second, in the group's network namespaces). "+
			"A queue above 0 while the group's CPU is idle is workers held by clients, not work: requests wait there before the server's own timing starts (SlowlabAcceptQueueWhileIdle).",
		query(fmt.Sprintf("sum by (group, port) (slowlab_socket_accept_queue{%s})", prodGroups), "{{group}} :{{port}} waiting"),
		query(fmt.Sprintf("sum by (group, port) (slowlab_socket_accept_queue_limit{%s})", prodGroups), "{{group}} :{{port}} limit"),
		query(fmt.Sprintf("sum by (group) (rate(slowlab_listen_overflows_total{%s}[$__rate_interval]))", prodGroups), "{{group}} overflows/s")))
	b.WithPanel(timeSeries("Socket receive-queue bytes", units.BytesIEC,
		"Bytes received on the group's TCP sockets and not yet read by the process, by side: accepted, requests waiting for a worker to read them; connected, responses from upstreams the group has not read (a proxy with buffering off reads the app only as fast as its slow client).",
		query(fmt.Sprintf("sum by (group, side) (slowlab_socket_receive_queue_bytes{%s})", prodGroups), "{{group}} {{side}}")))

	b.WithRow(dashboard.NewRowBuilder("Exporter health"))
	b.WithPanel(timeSeries("Collector success", units.Bool,
		"1 when the collector read everything in the last scrape. A collector at 0 still serves what it could read; see the exporter's log (SlowlabExporterCollectorFailing).",
		query(fmt.Sprintf("min by (instance, collector) (slowlab_exporter_collector_success{%s})", prodInstances), "{{instance}} {{collector}}")).
		Max(1))
	b.WithPanel(timeSeries("Collector duration", units.Seconds,
		"How long each collector took in the last scrape. It grows with the groups' processes and open file descriptors.",
		query(fmt.Sprintf("max by (instance, collector) (slowlab_exporter_collector_duration_seconds{%s})", prodInstances), "{{instance}} {{collector}}")))
	b.WithPanel(timeSeries("Dynamic groups", units.Short,
		"Groups the exporter's cgroup-re: selectors made (one per systemd unit or container), and the matches over --max-dynamic-groups summed into group=\"other\". "+
			"Empty without dynamic groups.",
		query(fmt.Sprintf("max by (instance) (slowlab_exporter_dynamic_groups{%s})", prodInstances), "{{instance}} groups"),
		query(fmt.Sprintf("max by (instance) (slowlab_exporter_dynamic_groups_other{%s})", prodInstances), "{{instance}} in other")))
	return finish(b)
}

// longLivedPanel is memory and send queue per established connection: an
// event loop holding WebSockets or event streams costs memory, not
// workers, and an app that queues for clients reading slowly grows it.
func longLivedPanel(s string) *timeseries.PanelBuilder {
	established := fmt.Sprintf(`clamp_min(sum by (group) (slowlab_sockets{state="established", %s}), 1)`, s)
	return timeSeries("Memory and send queue per connection", units.BytesIEC,
		"The group's RSS and its accepted sockets' send-queue bytes, each divided by its established TCP connections (WebSockets, event streams, long-polls and requests alike; a proxy's upstream connections count too). "+
			"An event loop holds a long-lived connection with memory, not a worker: RSS per connection that climbs while the send queue per connection is full is an app queueing messages for clients that read slowly, "+
			"and it grows until the memory limit (SlowlabMemoryNearLimit, then SlowlabOOMKill).",
		query(fmt.Sprintf("sum by (group) (slowlab_process_resident_memory_bytes{%s}) / %s", s, established), "{{group}} RSS per connection"),
		query(fmt.Sprintf(`sum by (group) (slowlab_socket_send_queue_bytes{side="accepted", %s}) / %s`, s, established), "{{group}} send queue per connection"))
}
