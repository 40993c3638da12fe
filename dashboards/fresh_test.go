package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/slowlab/slowlab/alerts"
	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/proxy"
)

// freshGuard bounds waits for events that happen promptly on a working
// stack; it only keeps a broken one from hanging the test.
const freshGuard = time.Minute

// TestQueriedMetricsExistBeforeTraffic: every metric a dashboard panel, a
// dashboard variable or a rule in alerts/ queries is in the /metrics of a
// fresh target, proxy, exporter or load generator before any request, so
// rate(), absent() and the alerts see a series (at 0) from the start
// instead of nothing until the first event.
func TestQueriedMetricsExistBeforeTraffic(t *testing.T) {
	target := freshTarget(t)
	fresh := map[string]map[string]dto.MetricType{
		"target":   scrapeFamilies(t, target),
		"proxy":    scrapeFamilies(t, freshProxy(t)),
		"exporter": scrapeFamilies(t, freshExporter(t, target)),
	}
	fresh["loadgen"] = freshLoadgen(t)

	queried := queriedMetrics(t)
	for _, name := range slices.Sorted(maps.Keys(queried)) {
		if !exposed(name, fresh) {
			t.Errorf("%s (queried by %s) is in no fresh /metrics (target, proxy, exporter, loadgen)", name, strings.Join(queried[name], "; "))
		}
	}
}

// exposed reports whether name is a family in one of the fresh outputs, or
// the _bucket, _sum or _count series of a histogram family there.
func exposed(name string, fresh map[string]map[string]dto.MetricType) bool {
	for _, fams := range fresh {
		if _, ok := fams[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			stem, ok := strings.CutSuffix(name, suffix)
			if ok && (fams[stem] == dto.MetricType_HISTOGRAM || fams[stem] == dto.MetricType_GAUGE_HISTOGRAM ||
				suffix != "_bucket" && fams[stem] == dto.MetricType_SUMMARY) {
				return true
			}
		}
	}
	return false
}

// queriedMetrics returns every metric name the committed dashboards and the
// rules query, with where each is used; recording-rule outputs are left out
// (Prometheus makes them, no component exposes them).
func queriedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	groups, err := alerts.Rules()
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, name := range alerts.Recorded(groups) {
		recorded[name] = true
	}
	out := map[string][]string{}
	add := func(where, expr string) {
		e, err := promql.ParseExpr(substitute(expr))
		if err != nil {
			t.Fatalf("%s: %q does not parse: %v", where, expr, err)
		}
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				if name := metricName(vs.LabelMatchers); name != "" && !recorded[name] {
					if w := out[name]; len(w) == 0 || w[len(w)-1] != where {
						out[name] = append(w, where)
					}
				}
			}
			return nil
		})
	}
	files := committed(t)
	for _, file := range slices.Sorted(maps.Keys(files)) {
		var b board
		if err := json.Unmarshal(files[file], &b); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, v := range b.Templating.List {
			if q, _ := v.Query.(string); v.Type == "query" {
				if m := labelValues.FindStringSubmatch(q); m != nil {
					add(fmt.Sprintf("%s variable %s", file, v.Name), m[1])
				}
			}
		}
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				walk(p.Panels)
				for _, tg := range p.Targets {
					add(fmt.Sprintf("%s panel %q", file, p.Title), tg.Expr)
				}
			}
		}
		walk(b.Panels)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			add(fmt.Sprintf("%s %s%s", alerts.RulesFile, r.Record, r.Alert), r.Expr)
		}
	}
	if len(out) == 0 {
		t.Fatal("no metric names found in the dashboards and rules")
	}
	return out
}

// scrapeFamilies GETs url and returns the families that have at least one
// series, with their types.
func scrapeFamilies(t *testing.T, url string) map[string]dto.MetricType {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	out := map[string]dto.MetricType{}
	for name, mf := range fams {
		if len(mf.GetMetric()) > 0 {
			out[name] = mf.GetType()
		}
	}
	return out
}

// serveUntilCleanup runs serve in a goroutine and, when the test ends,
// cancels its context and waits for it.
func serveUntilCleanup(t *testing.T, what string, serve func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(freshGuard):
			t.Errorf("%s did not stop", what)
		}
	})
}

// freshTarget serves the embedded target (published options) on loopback
// and returns its admin /metrics URL.
func freshTarget(t *testing.T) string {
	t.Helper()
	s, err := appserver.New(appserver.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	app, admin := listen(t), listen(t)
	serveUntilCleanup(t, "target", func(ctx context.Context) error { return s.Serve(ctx, app, admin) })
	return "http://" + admin.Addr().String() + "/metrics"
}

// freshProxy serves the embedded proxy (defaults, buffering on) in front of
// a port nothing is sent to, and returns its admin /metrics URL.
func freshProxy(t *testing.T) string {
	t.Helper()
	o := proxy.DefaultOptions()
	o.Upstream = "127.0.0.1:1"
	o.TempDir = t.TempDir()
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, admin := listen(t), listen(t)
	serveUntilCleanup(t, "proxy", func(ctx context.Context) error { return p.Serve(ctx, ln, admin) })
	return "http://" + admin.Addr().String() + "/metrics"
}

// freshExporter serves the exporter's /metrics for the lab's groups as they
// are before the experiment starts: their cgroups exist, with limits (the
// fixture tree), and none of their processes runs yet (an empty /proc).
func freshExporter(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	cfg := exporter.Config{
		Groups: []exporter.Group{
			// The fresh target's port: its listening socket, whose accept
			// queue is there before any client.
			{Name: "app", Selectors: []string{"cgroup:slowlab/app", "port:" + u.Port()}},
			// Its error log does not exist before the proxy starts: 0.
			{Name: "proxy", Selectors: []string{"cgroup:slowlab/proxy"}, ErrorLogs: []string{filepath.Join(t.TempDir(), "nginx.log")}},
			{Name: "loadgen", Selectors: []string{"cgroup:slowlab/loadgen"}},
			{Name: "roles", Selectors: []string{`cgroup-re:slowlab/(?P<role>[^/]+)`}, GroupName: "role-${role}"},
		},
		TempDirs: []string{t.TempDir()},
	}
	e, err := exporter.New(cfg, exporter.Options{
		ProcFS:   "../exporter/testdata/fixtures/proc",
		CgroupFS: "../exporter/testdata/fixtures/cgroup-v2",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux, err := e.Mux(exporter.DefaultMetricsPath, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + exporter.DefaultMetricsPath
}

// freshLoadgen returns the families on the load generator's /metrics (served
// as the command serves them) after an open loop has created its run_id and
// role labels and before its first request has finished: the app holds that
// request until the scrape is done.
func freshLoadgen(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := loadgen.NewMetrics(reg)
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	t.Cleanup(metrics.Close)

	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(app.Close)

	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: freshGuard})
	defer client.Close()
	loop := loadgen.OpenLoop{
		Client: client, URL: app.URL + "/fast", Start: time.Now(), RunID: "fresh", Metrics: m,
		Pacer: loadgen.ConstantPacer{Interval: time.Second, Duration: time.Second}, // one request
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan []loadgen.Result, 1)
	go func() { results <- loop.Run(ctx) }()
	defer func() {
		close(release)
		select {
		case rs := <-results:
			if len(rs) != 1 || rs[0].Status != http.StatusOK {
				t.Errorf("the held request: %+v, want one 200", rs)
			}
		case <-time.After(freshGuard):
			t.Error("the open loop did not finish after its request was released")
		}
	}()

	select {
	case <-arrived:
	case rs := <-results:
		t.Fatalf("the open loop ended before its request reached the app: %+v", rs)
	case <-time.After(freshGuard):
		t.Fatal("the open loop's request never reached the app")
	}
	fams := scrapeFamilies(t, metrics.URL)
	if len(fams) == 0 {
		t.Fatal("loadgen /metrics is empty while a request is in flight")
	}
	return fams
}
