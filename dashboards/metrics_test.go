package dashboards

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slowlab/slowlab/alerts"
	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/proxy"
)

// knownMetrics returns every series name slowlab exposes, taken from the
// real registries and the exporter's golden output rather than a list that
// could drift, plus the recording rules alerts/ defines. A histogram
// contributes its name (native), _bucket, _sum and _count.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := make(map[string]bool)
	add := func(from string, mfs []*dto.MetricFamily) {
		if len(mfs) == 0 {
			t.Fatalf("%s: no metrics", from)
		}
		for _, mf := range mfs {
			name := mf.GetName()
			known[name] = true
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				known[name+"_bucket"], known[name+"_sum"], known[name+"_count"] = true, true, true
			case dto.MetricType_SUMMARY:
				known[name+"_sum"], known[name+"_count"] = true, true
			}
		}
	}
	for from, reg := range stackRegistries(t) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("gather %s: %v", from, err)
		}
		add(from, mfs)
	}

	golden, err := filepath.Glob("../exporter/testdata/e2e-*.metrics")
	if err != nil || len(golden) == 0 {
		t.Fatalf("exporter golden files: %v, %v", golden, err)
	}
	for _, path := range golden {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The golden files mask durations, the one value that varies.
		text := strings.ReplaceAll(string(b), "<duration>", "0")
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var mfs []*dto.MetricFamily
		for _, mf := range fams {
			mfs = append(mfs, mf)
		}
		add(path, mfs)
	}

	groups, err := alerts.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range alerts.Recorded(groups) {
		known[name] = true
	}
	return known
}

// stackRegistries runs the embedded target behind the embedded proxy on
// loopback, sends one request through both with the load generator and one
// to a closed port, so every metric vector has a child, and returns the
// three registries.
func stackRegistries(t *testing.T) map[string]*prometheus.Registry {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	t.Cleanup(func() {
		cancel()
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("target or proxy did not stop")
			}
		}
	})

	app, err := appserver.New(appserver.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	appLn := listen(t)
	go func() { done <- app.Serve(ctx, appLn, nil) }()

	po := proxy.DefaultOptions()
	po.Upstream = appLn.Addr().String()
	po.TempDir = t.TempDir()
	px, err := proxy.New(po)
	if err != nil {
		t.Fatal(err)
	}
	pxLn := listen(t)
	go func() { done <- px.Serve(ctx, pxLn, nil) }()

	closed := listen(t)
	closedAddr := closed.Addr().String()
	closed.Close()

	reg := prometheus.NewRegistry()
	m := loadgen.NewMetrics(reg)
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: 5 * time.Second})
	defer client.Close()
	once := loadgen.ConstantPacer{Interval: time.Millisecond, Duration: time.Millisecond}
	for _, c := range []struct {
		addr string
		ok   bool
	}{{pxLn.Addr().String(), true}, {closedAddr, false}} {
		ol := loadgen.OpenLoop{Client: client, URL: "http://" + c.addr + "/fast", Pacer: once, Start: time.Now(), RunID: "lint", Metrics: m}
		rs := ol.Run(ctx)
		if len(rs) != 1 || (rs[0].Status == 200) != c.ok {
			t.Fatalf("request to %s: %+v, want ok=%v", c.addr, rs, c.ok)
		}
	}
	return map[string]*prometheus.Registry{"loadgen": reg, "target": app.Registry(), "proxy": px.Registry()}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestKnownMetricsComplete guards the catalog itself: names from each
// source, including vectors that only have children after traffic.
func TestKnownMetricsComplete(t *testing.T) {
	known := knownMetrics(t)
	for _, name := range []string{
		"slowlab_loadgen_request_duration_seconds_bucket", "slowlab_loadgen_request_duration_seconds",
		"slowlab_loadgen_requests_total", "slowlab_loadgen_request_errors_total", "slowlab_loadgen_in_flight",
		"slowlab_target_requests_total", "slowlab_target_busy_slots", "slowlab_target_slots",
		"slowlab_proxy_requests_total", "slowlab_proxy_temp_files_open",
		"slowlab_process_wchan", "slowlab_cgroup_cpu_limit_cores", "slowlab_exporter_collector_success",
		"slowlab:loadgen_request_duration_seconds:p95",
	} {
		if !known[name] {
			t.Errorf("%s missing from the known metrics", name)
		}
	}
	for name := range known {
		if !strings.HasPrefix(name, "slowlab") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("unexpected metric %s", name)
		}
	}
}
