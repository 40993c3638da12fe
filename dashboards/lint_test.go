package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/slowlab/slowlab/alerts"
)

// The lint rules mirror grafana/dashboard-linter's (template-datasource,
// panel-datasource, target-datasource, panel-title-description,
// panel-units, target-rate-interval, target-promql, template-on-time-change-
// reload) plus two of slowlab's own: _bucket series only inside
// histogram_quantile or a heatmap, and only metrics slowlab exposes.

// board is a dashboard's JSON as Grafana reads it, down to what the rules
// look at.
type board struct {
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Label      string `json:"label"`
	Query      any    `json:"query"`
	Datasource *dsRef `json:"datasource"`
	Refresh    int    `json:"refresh"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *dsRef `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

const datasourceUID = "${" + DatasourceVariable + "}"

// rateInterval stands in for $__rate_interval when a query is parsed, so
// the rate rule can tell it from a literal range.
const rateInterval = 1234 * time.Second

var templateVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute replaces Grafana template variables with valid PromQL: the
// interval variables with durations, any other variable (used inside
// matcher strings) with a word.
func substitute(expr string) string {
	return templateVar.ReplaceAllStringFunc(expr, func(m string) string {
		sm := templateVar.FindStringSubmatch(m)
		switch sm[1] + sm[2] + sm[3] {
		case "__rate_interval":
			return "1234s"
		case "__interval", "__range":
			return "4321s"
		default:
			return "placeholder"
		}
	})
}

var promql = parser.NewParser(parser.Options{})

// lintExpr checks one PromQL expression: it parses, rate-like functions
// use $__rate_interval (dashboards only), _bucket series are read through
// histogram_quantile (or by a heatmap), and every metric is known.
func lintExpr(expr string, inDashboard, heatmap bool, known map[string]bool) []string {
	e, err := promql.ParseExpr(substitute(expr))
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	var problems []string
	parser.Inspect(e, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.Call:
			if !inDashboard || !slices.Contains([]string{"rate", "irate", "increase"}, n.Func.Name) {
				break
			}
			for _, arg := range n.Args {
				if ms, ok := arg.(*parser.MatrixSelector); ok && ms.Range != rateInterval {
					problems = append(problems, fmt.Sprintf("%s over [%s], want [$__rate_interval]", n.Func.Name, ms.Range))
				}
			}
		case *parser.VectorSelector:
			name := metricName(n.LabelMatchers)
			if name == "" {
				problems = append(problems, fmt.Sprintf("selector %s names no metric", n))
				break
			}
			if !known[name] {
				problems = append(problems, fmt.Sprintf("metric %s is not exposed by loadgen, target, proxy or exporter, nor recorded in alerts/", name))
			}
			if strings.HasSuffix(name, "_bucket") && !heatmap && !inQuantile(path) {
				problems = append(problems, fmt.Sprintf("%s outside histogram_quantile in a %s", name, map[bool]string{true: "non-heatmap panel", false: "rule"}[inDashboard]))
			}
		}
		return nil
	})
	return problems
}

func metricName(ms []*labels.Matcher) string {
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

func inQuantile(path []parser.Node) bool {
	for _, p := range path {
		if c, ok := p.(*parser.Call); ok && c.Func.Name == "histogram_quantile" {
			return true
		}
	}
	return false
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// lintBoard applies every rule to a dashboard and returns the problems,
// each prefixed with where it is.
func lintBoard(b board, known map[string]bool) []string {
	var problems []string
	report := func(where string, ps ...string) {
		for _, p := range ps {
			problems = append(problems, where+": "+p)
		}
	}

	hasDatasource := false
	for _, v := range b.Templating.List {
		where := "variable " + v.Name
		switch v.Type {
		case "datasource":
			if v.Name == DatasourceVariable && v.Query == "prometheus" && v.Label == "Data source" {
				hasDatasource = true
			}
		case "query":
			if v.Datasource == nil || v.Datasource.UID != datasourceUID {
				report(where, "does not use the datasource variable")
			}
			if v.Refresh != 2 {
				report(where, fmt.Sprintf("refresh %d, want 2 (on time range change)", v.Refresh))
			}
			q, _ := v.Query.(string)
			m := labelValues.FindStringSubmatch(q)
			if m == nil {
				report(where, fmt.Sprintf("query %q, want label_values(METRIC, LABEL)", q))
				break
			}
			report(where, lintExpr(m[1], true, false, known)...)
		}
	}
	if !hasDatasource {
		report("templating", fmt.Sprintf(`no variable %q of type datasource, query "prometheus", label "Data source"`, DatasourceVariable))
	}

	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if p.Title == "" {
				report(where, "no title")
			}
			if p.Description == "" {
				report(where, "no description")
			}
			if p.FieldConfig.Defaults.Unit == "" {
				report(where, "no unit")
			}
			if p.Datasource == nil || p.Datasource.UID != datasourceUID || p.Datasource.Type != "prometheus" {
				report(where, "does not use the datasource variable")
			}
			if len(p.Targets) == 0 {
				report(where, "no queries")
			}
			refs := make(map[string]bool)
			for _, tg := range p.Targets {
				where := where + " query " + tg.RefID
				if tg.RefID == "" || refs[tg.RefID] {
					report(where, "missing or repeated refId")
				}
				refs[tg.RefID] = true
				if tg.Datasource == nil || tg.Datasource.UID != datasourceUID {
					report(where, "does not use the datasource variable")
				}
				report(where, lintExpr(tg.Expr, true, p.Type == "heatmap", known)...)
			}
		}
	}
	walk(b.Panels)
	return problems
}

func TestLintDashboards(t *testing.T) {
	known := knownMetrics(t)
	for name, raw := range committed(t) {
		t.Run(name, func(t *testing.T) {
			for _, placeholder := range []string{"__inputs", "${DS_"} {
				if strings.Contains(string(raw), placeholder) {
					t.Errorf("contains %s: the JSON must import as is", placeholder)
				}
			}
			var b board
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatal(err)
			}
			if len(b.Panels) == 0 {
				t.Fatal("no panels")
			}
			for _, p := range lintBoard(b, known) {
				t.Error(p)
			}
		})
	}
}

// TestLintRules applies the query rules to every rule in alerts/.
func TestLintRules(t *testing.T) {
	known := knownMetrics(t)
	groups, err := alerts.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			for _, p := range lintExpr(r.Expr, false, false, known) {
				t.Errorf("rule %s%s: %s", r.Record, r.Alert, p)
			}
		}
	}
}

// TestLintCatchesProblems feeds the linter a dashboard that breaks every
// rule once, so a rule that silently stops working fails here.
func TestLintCatchesProblems(t *testing.T) {
	known := map[string]bool{"m_total": true, "h_bucket": true}
	raw := `{
	  "templating": {"list": [
	    {"type": "query", "name": "v", "query": "label_values(nope, x)", "refresh": 1}
	  ]},
	  "panels": [
	    {"type": "row", "panels": [
	      {"id": 1, "type": "timeseries", "targets": [{"refId": "A", "expr": "rate(m_total[5m])"}]}
	    ]},
	    {"id": 2, "type": "timeseries", "title": "t", "description": "d",
	     "fieldConfig": {"defaults": {"unit": "s"}},
	     "datasource": {"type": "prometheus", "uid": "${datasource}"},
	     "targets": [
	       {"refId": "A", "datasource": {"uid": "${datasource}"}, "expr": "sum(rate(h_bucket[$__rate_interval]))"},
	       {"refId": "A", "datasource": {"uid": "${datasource}"}, "expr": "sum(rate(m_total{x=~\"$v\"}[$__rate_interval])"},
	       {"refId": "C", "datasource": {"uid": "${datasource}"}, "expr": "histogram_quantile(0.9, rate(h_bucket[$__rate_interval])) + increase(m_total[$__interval])"}
	     ]},
	    {"id": 3, "type": "heatmap", "title": "t", "description": "d",
	     "fieldConfig": {"defaults": {"unit": "s"}},
	     "datasource": {"type": "prometheus", "uid": "${datasource}"},
	     "targets": [{"refId": "A", "datasource": {"uid": "${datasource}"}, "expr": "sum by (le) (rate(h_bucket[$__rate_interval]))"}]}
	  ]
	}`
	var b board
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatal(err)
	}
	got := lintBoard(b, known)
	want := []string{
		"variable v: does not use the datasource variable",
		"variable v: refresh 1, want 2",
		"variable v: metric nope is not exposed",
		`templating: no variable "datasource"`,
		`panel 1 "": no title`,
		`panel 1 "": no description`,
		`panel 1 "": no unit`,
		`panel 1 "": does not use the datasource variable`,
		`panel 1 "" query A: does not use the datasource variable`,
		`panel 1 "" query A: rate over [5m0s], want [$__rate_interval]`,
		`panel 2 "t" query A: h_bucket outside histogram_quantile in a non-heatmap panel`,
		`panel 2 "t" query A: missing or repeated refId`,
		`panel 2 "t" query A: does not parse`,
		`panel 2 "t" query C: increase over [1h12m1s], want [$__rate_interval]`,
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("no problem starting %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}
