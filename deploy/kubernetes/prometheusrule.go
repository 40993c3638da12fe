package kubernetes

import (
	"bytes"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/slowlab/slowlab/alerts"
)

// RuleFile is the PrometheusRule manifest beside kustomization.yaml.
const RuleFile = "prometheusrule.yaml"

// ruleHeader opens RuleFile: where it comes from, and what selects it.
const ruleHeader = `# Generated from alerts/slowlab.rules.yml by go generate ./deploy/kubernetes:
# edit the rules file, not this one (a test fails when they differ).
# slowlab's recording rules and alerts for the Prometheus Operator, with
# their runbook at alerts/runbook.md. A Prometheus loads it when its
# ruleSelector and ruleNamespaceSelector select it: add the label yours
# selects on (kube-prometheus-stack's: release: <its release name>), with
# a kustomize labels entry or patch.
`

// PrometheusRule returns alerts.Rules() as the Prometheus Operator's
// PrometheusRule slowlab, in the namespace and with the name label of the
// exporter's other manifests.
func PrometheusRule() (*monitoringv1.PrometheusRule, error) {
	groups, err := alerts.Rules()
	if err != nil {
		return nil, err
	}
	pr := &monitoringv1.PrometheusRule{
		TypeMeta: metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PrometheusRuleKind},
		ObjectMeta: metav1.ObjectMeta{Name: "slowlab", Namespace: "monitoring",
			Labels: map[string]string{"app.kubernetes.io/name": "slowlab-exporter"}},
	}
	for _, g := range groups {
		rg := monitoringv1.RuleGroup{Name: g.Name, Interval: duration(g.Interval)}
		for _, r := range g.Rules {
			rg.Rules = append(rg.Rules, monitoringv1.Rule{Record: r.Record, Alert: r.Alert, Expr: intstr.FromString(r.Expr),
				For: duration(r.For), Labels: r.Labels, Annotations: r.Annotations})
		}
		pr.Spec.Groups = append(pr.Spec.Groups, rg)
	}
	return pr, nil
}

// duration is d as the operator's optional duration: nil when empty.
func duration(d string) *monitoringv1.Duration {
	if d == "" {
		return nil
	}
	v := monitoringv1.Duration(d)
	return &v
}

// RuleManifest is RuleFile's content: ruleHeader, then PrometheusRule()
// as YAML.
func RuleManifest() ([]byte, error) {
	pr, err := PrometheusRule()
	if err != nil {
		return nil, err
	}
	y, err := yaml.Marshal(pr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RuleFile, err)
	}
	return bytes.Join([][]byte{[]byte(ruleHeader), y}, nil), nil
}
