// Package kubernetes holds the exporter's Kubernetes manifests (a
// DaemonSet, a headless Service, a PodMonitor for the Prometheus Operator,
// the ConfigMap with the dynamic groups of a node's containers, and the
// PrometheusRule that prometheusrule.go makes of alerts/slowlab.rules.yml,
// written by go generate ./deploy/kubernetes) and the tests that keep
// them valid: each decodes strictly into its k8s.io/api or
// prometheus-operator type, says what the exporter's README asks of it,
// the DaemonSet's command line runs the real exporter with the
// ConfigMap's config, and the PrometheusRule is what the rules file makes.
package kubernetes

//go:generate go run ./gen
