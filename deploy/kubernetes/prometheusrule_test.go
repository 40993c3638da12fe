package kubernetes

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/slowlab/slowlab/alerts"
)

// The committed PrometheusRule is what the generator makes of
// alerts/slowlab.rules.yml now, like go generate && git diff --exit-code.
func TestPrometheusRuleUpToDate(t *testing.T) {
	want, err := RuleManifest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(RuleFile)
	if err != nil {
		t.Fatalf("%v (run go generate ./deploy/kubernetes)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what alerts/%s makes: run go generate ./deploy/kubernetes and commit it", RuleFile, alerts.RulesFile)
	}
}

// The committed PrometheusRule decodes strictly into the operator's type
// (a misspelt field fails), names its kind, and holds every group and rule
// of alerts/slowlab.rules.yml, field for field, in order.
func TestPrometheusRuleDecodesStrictly(t *testing.T) {
	var pr monitoringv1.PrometheusRule
	decode(t, RuleFile, &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Name == "" {
		t.Errorf("apiVersion %q, kind %q, name %q", pr.APIVersion, pr.Kind, pr.Name)
	}
	groups, err := alerts.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var back []alerts.Group
	for _, g := range pr.Spec.Groups {
		bg := alerts.Group{Name: g.Name}
		if g.Interval != nil {
			bg.Interval = string(*g.Interval)
		}
		for _, r := range g.Rules {
			br := alerts.Rule{Record: r.Record, Alert: r.Alert, Expr: r.Expr.String(), Labels: r.Labels, Annotations: r.Annotations}
			if r.For != nil {
				br.For = string(*r.For)
			}
			bg.Rules = append(bg.Rules, br)
		}
		back = append(back, bg)
	}
	if len(alerts.Recorded(groups)) == 0 || len(groups) < 2 {
		t.Fatalf("alerts.Rules(): %d groups: the comparison reads the wrong file", len(groups))
	}
	if len(back) != len(groups) {
		t.Fatalf("%s: %d groups, alerts/%s %d", RuleFile, len(back), alerts.RulesFile, len(groups))
	}
	for i, g := range groups {
		if back[i].Name != g.Name || back[i].Interval != g.Interval || len(back[i].Rules) != len(g.Rules) {
			t.Errorf("group %d: %s, interval %q, %d rules; alerts/%s: %s, %q, %d", i, back[i].Name, back[i].Interval, len(back[i].Rules),
				alerts.RulesFile, g.Name, g.Interval, len(g.Rules))
			continue
		}
		for j, r := range g.Rules {
			if !reflect.DeepEqual(back[i].Rules[j], r) {
				t.Errorf("group %s rule %d:\n%s: %+v\nalerts/%s: %+v", g.Name, j, RuleFile, back[i].Rules[j], alerts.RulesFile, r)
			}
		}
	}

	b, err := os.ReadFile(RuleFile)
	if err != nil {
		t.Fatal(err)
	}
	misspelt := strings.Replace(string(b), "    - alert: ", "    - alertname: ", 1)
	if err := strictDecode([]byte(misspelt), &monitoringv1.PrometheusRule{}); err == nil {
		t.Error("a rule with alertname: decoded without error")
	}
}
