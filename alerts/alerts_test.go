package alerts

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// promtool returns the path of promtool. Without it the test skips, except
// in CI (CI=true), where the Makefile installs Debian's prometheus package
// and a missing promtool is a failure.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found with CI=true (Debian package prometheus): %v", err)
		}
		t.Skipf("promtool not found (apt-get install prometheus): %v", err)
	}
	return path
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

func TestPromtoolCheckRules(t *testing.T) {
	runPromtool(t, "check", "rules", RulesFile)
}

func TestPromtoolTestRules(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs promtool")
	runPromtool(t, "test", "rules", "tests.yml")
}

const runbookURL = "https://github.com/slowlab/slowlab/blob/main/alerts/runbook.md#"

var (
	alertName     = regexp.MustCompile(`^Slowlab[A-Z][A-Za-z0-9]*$`)
	recordName    = regexp.MustCompile(`^slowlab:[a-z0-9_]+:[a-z0-9_]+$`)
	severities    = map[string]bool{"critical": true, "warning": true, "info": true}
	allowedAnnots = map[string]bool{"summary": true, "description": true, "runbook_url": true}
)

// runbookAnchors returns the GitHub anchors of runbook.md's "## " headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "## "); ok {
			anchors[githubAnchor(h)] = true
		}
	}
	return anchors
}

// githubAnchor is the id GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than - and _ dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestRuleConventions checks the monitoring-mixins conventions: CamelCase
// alert names with the Slowlab prefix, a severity label, a static summary,
// a templated description and a runbook_url whose anchor exists; every
// runbook section belongs to an alert; recording rules are level:metric:ops.
func TestRuleConventions(t *testing.T) {
	groups, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	anchors := runbookAnchors(t)
	alerts := make(map[string]bool)
	for _, g := range groups {
		for _, r := range g.Rules {
			switch {
			case r.Record != "" && r.Alert != "":
				t.Errorf("rule %s/%s: both record and alert", r.Record, r.Alert)
			case r.Record != "":
				if !recordName.MatchString(r.Record) {
					t.Errorf("recording rule %q: want slowlab:<metric>:<operation>", r.Record)
				}
				if len(r.Labels) > 0 || len(r.Annotations) > 0 || r.For != "" {
					t.Errorf("recording rule %s: labels, annotations or for set", r.Record)
				}
			case r.Alert != "":
				alerts[r.Alert] = true
				checkAlert(t, r, anchors)
			default:
				t.Errorf("group %s: rule with neither record nor alert", g.Name)
			}
		}
	}
	for a := range anchors {
		if strings.HasPrefix(a, "slowlab") && !alerts[anchorAlert(a, alerts)] {
			t.Errorf("runbook.md section #%s belongs to no alert", a)
		}
	}
	if len(alerts) < 6 {
		t.Errorf("%d alerts, want at least 6", len(alerts))
	}
}

func anchorAlert(anchor string, alerts map[string]bool) string {
	for a := range alerts {
		if strings.ToLower(a) == anchor {
			return a
		}
	}
	return ""
}

func checkAlert(t *testing.T, r Rule, anchors map[string]bool) {
	t.Helper()
	if !alertName.MatchString(r.Alert) {
		t.Errorf("alert %q: want CamelCase with the Slowlab prefix", r.Alert)
	}
	if !severities[r.Labels["severity"]] {
		t.Errorf("alert %s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
	}
	for k := range r.Annotations {
		if !allowedAnnots[k] {
			t.Errorf("alert %s: annotation %q, want only summary, description, runbook_url", r.Alert, k)
		}
	}
	if s := r.Annotations["summary"]; s == "" || strings.Contains(s, "{{") {
		t.Errorf("alert %s: summary %q, want a static sentence", r.Alert, s)
	}
	if d := r.Annotations["description"]; !strings.Contains(d, "{{") || !strings.Contains(d, "$labels") {
		t.Errorf("alert %s: description %q, want a template naming $labels", r.Alert, d)
	}
	anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookURL)
	if !ok {
		t.Errorf("alert %s: runbook_url %q, want %s<anchor>", r.Alert, r.Annotations["runbook_url"], runbookURL)
	} else if anchor != strings.ToLower(r.Alert) || !anchors[anchor] {
		t.Errorf("alert %s: runbook anchor #%s: want #%s and a '## %s' section in runbook.md", r.Alert, anchor, strings.ToLower(r.Alert), r.Alert)
	}
}

// TestEveryAlertTested checks tests.yml has, for every alert, a case where
// it fires and a case where it must not.
func TestEveryAlertTested(t *testing.T) {
	groups, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("tests.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Name      string `yaml:"name"`
			AlertTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.RuleFiles) != 1 || f.RuleFiles[0] != RulesFile {
		t.Errorf("tests.yml rule_files %v, want [%s]", f.RuleFiles, RulesFile)
	}
	fires, silent := make(map[string]int), make(map[string]int)
	for _, tc := range f.Tests {
		for _, a := range tc.AlertTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if fires[r.Alert] == 0 {
				t.Errorf("tests.yml: no case where %s fires", r.Alert)
			}
			if silent[r.Alert] == 0 {
				t.Errorf("tests.yml: no case where %s must not fire", r.Alert)
			}
		}
	}
}
