// Package dashboards builds slowlab's Grafana dashboards in Go and writes
// them as JSON (slowlab-experiment.json, slowlab-production.json) for
// import or file provisioning. The JSON files beside this file are
// generated: edit the Go code, then run `go generate ./dashboards`; a test
// fails while the committed JSON differs from what the code builds.
//
// It owns the dashboards and their PromQL; the metrics come from loadgen,
// appserver, proxy and exporter, and the recording rules some panels
// reuse from alerts/. It does not talk to Grafana or Prometheus.
package dashboards

//go:generate go run ./gen
