// Package alerts holds slowlab's Prometheus rules: slowlab.rules.yml
// (recording rules and alerts on the loadgen and exporter metrics), their
// promtool unit tests in tests.yml, and runbook.md, one section per alert.
// The Go code only embeds and parses the rules file, so tests elsewhere
// (dashboards) can check the names and queries it defines; it does not
// load rules into Prometheus.
package alerts
