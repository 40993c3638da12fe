// Package exporter serves Prometheus metrics that no other exporter shows for
// the groups of processes an experiment (or an operator) cares about: cgroup
// CPU usage, quota and throttling, cgroup memory, process states, resident
// memory and kernel wait channels, the reverse proxy's temporary files
// (including unlinked ones still held open) and TCP socket queues.
//
// A group is named by the user (app, proxy, loadgen, ...) and selects
// processes with selectors such as cgroup:PATH, comm:REGEX or tree:PID; see
// Config. A cgroup-re:REGEX selector makes a group per matching cgroup at
// every scrape, its named captures as labels (dynamic.go), bounded by
// Options.MaxDynamicGroups. Each data source is one Collector in its own file (cgroup.go,
// process.go, tempfiles.go, sockets.go, errorlog.go), registered once with
// registerCollector, which also gives it its --collector.NAME and
// --no-collector.NAME flags and declares the flags of its own settings
// (CollectorFlags puts them on the command line: process.go's
// --collector.process.wchan-top, errorlog.go's --collector.errorlog.file). Every
// filesystem root (/proc, /sys/fs/cgroup) comes from Options, so tests run the
// collectors on fixture trees under testdata.
//
// The package owns collection and the HTTP handler (OpenMetrics negotiation,
// scrape timeouts, landing page). It does not own listening, TLS or basic
// auth (the command wires prometheus/exporter-toolkit), nor host-wide metrics
// that node_exporter already provides. It never labels by PID, socket or
// error text: label values are group names, states, a bounded set of
// wait-channel names, and the captures of dynamic groups (unit names, pod
// UIDs), bounded by MaxDynamicGroups.
package exporter
