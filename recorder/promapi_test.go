package recorder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
)

func TestColumnQuery(t *testing.T) {
	got := columnQuery(resourceColumns[0], "app|proxy|loadgen", 200*time.Millisecond)
	want := `sum by (group) (last_over_time(slowlab_cgroup_cpu_usage_seconds_total{group=~"app|proxy|loadgen"}[200ms]))` +
		` or sum by (group) (last_over_time(slowlab_process_cpu_seconds_total{group=~"app|proxy|loadgen"}[200ms]))`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestQueryRangeErrors(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	for _, tc := range []struct {
		url        string
		start, end time.Time
		step       time.Duration
		want       string
	}{
		{"http://127.0.0.1:1", now, now.Add(time.Second), 0, "prometheus query: step 0s: want 1ms or more"},
		{"http://127.0.0.1:1", now, now.Add(-time.Second), time.Second, "prometheus query: end 2026-01-02T03:04:04Z is before start 2026-01-02T03:04:05Z"},
		{"http://127.0.0.1:1", now, now.Add(time.Second), time.Second, "prometheus query_range for "},
	} {
		rows, err := QueryRange(ctx, tc.url, "r", tc.start, tc.end, tc.step)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("QueryRange(%s, %v): %d rows, %v; want an error starting %q", tc.url, tc.step, len(rows), err, tc.want)
		}
	}
}

// startPrometheus runs the Debian prometheus binary on a free loopback
// port with cfg as its configuration and returns its URL once ready. It is
// stopped, by PID, when the test ends.
func startPrometheus(t *testing.T, cfg string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus is not installed (CI=true): %v", err)
		}
		t.Skipf("prometheus is not installed (apt-get install prometheus): %v", err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("prometheus exited before it was ready: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready after 30s: %v", url, err)
		}
	}
}

// waitForTarget waits until query returns 1 at promURL: Prometheus sends
// discovered targets to its scrape loop only every 5 s, so being ready is
// not yet scraping.
func waitForTarget(t *testing.T, promURL, query string) {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: promURL})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(client)
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, _, _, err := prom.Query(context.Background(), query, time.Now())
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 && vec[0].Value == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not 1 after 20s: %v, %v", query, v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestQueryRangeRealPrometheus has a real Prometheus scrape the exporter
// stand-in every 200 ms while the Sampler scrapes it directly, then reads
// the same window back with QueryRange. The app's CPU counter grows at one
// second per second, so each value says when it was measured.
func TestQueryRangeRealPrometheus(t *testing.T) {
	const (
		interval = 200 * time.Millisecond
		window   = 3 * time.Second
		slack    = 0.1 // seconds between a scrape's timestamp and the value
	)
	t0 := time.Now()
	since := func(at float64, start time.Time) float64 { return start.Sub(t0).Seconds() + at }
	series := fixtureSeries()
	delete(series, seriesKey{metricCgroupCPU, "app", ""})
	exp := newTestExporter(series)
	exp.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: metricCgroupCPU, Help: "test value", ConstLabels: prometheus.Labels{"group": "app"},
	}, func() float64 { return time.Since(t0).Seconds() }))
	srv := httptest.NewServer(exp.handler(true))
	defer srv.Close()

	promURL := startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: slowlab
    static_configs:
      - targets: ['%[2]s']
`, "200ms", strings.TrimPrefix(srv.URL, "http://")))
	waitForTarget(t, promURL, `up{job="slowlab"}`)

	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(window+interval/2))
	defer cancel()
	var direct []ResourceSample
	s := &Sampler{URLs: []string{srv.URL}, Start: start, RunID: "prom", OnSample: func(r ResourceSample) error {
		direct = append(direct, r)
		return nil
	}}
	if _, err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * interval) // let Prometheus commit its last scrapes

	rows, err := QueryRange(context.Background(), promURL, "prom", start, start.Add(window), interval)
	if err != nil {
		t.Fatal(err)
	}
	steps := int(window/interval) + 1
	if len(rows) != steps*len(Components) || len(direct) != steps*len(Components) {
		t.Fatalf("got %d rows from Prometheus and %d scraped, want %d each", len(rows), len(direct), steps*len(Components))
	}
	withData := 0
	for k := range steps {
		step, scraped := rows[k*3:k*3+3], direct[k*3:k*3+3]
		if ts := (time.Duration(k) * interval).Seconds(); step[0].TS != ts {
			t.Errorf("step %d: t_s %v, want %v", k, step[0].TS, ts)
		}
		if step[0].Error == ErrNoPromSamples.Error() {
			checkTick(t, k, step, errorRows("", 0, Components[:], ErrNoPromSamples.Error()))
			continue
		}
		withData++
		// The app's CPU was measured within the step before t_s...
		cpu := step[0].CPUSeconds
		at := since(step[0].TS, start)
		if !cpu.Valid || cpu.Value < at-interval.Seconds()-slack || cpu.Value > at+slack {
			t.Errorf("step %d (%.3f s after t0): app cpu_seconds %s, want within [%.3f, %.3f]",
				k, at, show(&cpu), at-interval.Seconds()-slack, at+slack)
		}
		// ...and so was the value scraped directly at about the same time.
		if d := scraped[0].CPUSeconds; !d.Valid || math.Abs(d.Value-cpu.Value) > interval.Seconds()+2*slack {
			t.Errorf("step %d: app cpu_seconds %s from Prometheus, %s scraped directly", k, show(&cpu), show(&d))
		}
		// Everything else is constant and must be exact in both, with the
		// same empty cells.
		want := fixtureRows()
		want[0].CPUSeconds = cpu
		checkTick(t, k, step, want)
		want[0].CPUSeconds = scraped[0].CPUSeconds
		checkTick(t, k, scraped, want)
	}
	t.Logf("%d of %d steps have samples in Prometheus", withData, steps)
	if withData < steps/2 {
		t.Errorf("only %d of %d steps have samples; Prometheus scrapes every %v", withData, steps, interval)
	}

	// Querying in pieces gives the same rows.
	defer func(n int) { maxStepsPerQuery = n }(maxStepsPerQuery)
	maxStepsPerQuery = 4
	pieces, err := QueryRange(context.Background(), promURL, "prom", start, start.Add(window), interval)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffRows(rows, pieces, 0); d != "" {
		t.Errorf("query in pieces of 4 steps: %s", d)
	}
}

// TestQueryRangeDown checks that an unreachable Prometheus is an error, not
// empty rows.
func TestQueryRangeDown(t *testing.T) {
	addr := freeLoopbackAddr(t)
	now := time.Now()
	_, err := QueryRange(context.Background(), "http://"+addr, "r", now, now.Add(time.Second), DefaultInterval)
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("got %v, want a connection error", err)
	}
}
