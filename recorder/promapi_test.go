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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestColumnQuery(t *testing.T) {
	got := columnQuery(resourceColumns[0], "app|proxy|loadgen", RunSelector("r1"), 200*time.Millisecond)
	want := `sum by (group) (last_over_time(slowlab_cgroup_cpu_usage_seconds_total{group=~"app|proxy|loadgen",run_id="r1"}[200ms]))` +
		` or sum by (group) (last_over_time(slowlab_process_cpu_seconds_total{group=~"app|proxy|loadgen",run_id="r1"}[200ms]))`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	sel, err := ParseSelector(`{job="slowlab-exporter", instance=~"127.0.0.1:.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	got = columnQuery(resourceColumns[3], "app", sel, time.Second)
	want = `sum by (group) (last_over_time(slowlab_cgroup_memory_usage_bytes{group=~"app",job="slowlab-exporter",instance=~"127.0.0.1:.*"}[1s]))`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want is String() or the error
		runID    string
	}{
		{`{run_id="r1"}`, `{run_id="r1"}`, "r1"},
		{` { job = "slowlab-exporter" , run_id = "a\"b" } `, `{job="slowlab-exporter",run_id="a\"b"}`, `a"b`},
		{`{job="slowlab-exporter",instance="127.0.0.1:9817"}`, `{job="slowlab-exporter",instance="127.0.0.1:9817"}`, ""},
		{`{run_id=~"r1|r2"}`, `{run_id=~"r1|r2"}`, ""},
		{`{run_id=~".*",job!="x",instance="i"}`, `{run_id=~".*",job!="x",instance="i"}`, ""},
		{`{"run.id"="r1"}`, `{"run.id"="r1"}`, ""},

		{`{run_id="r1"`, `1:13: parse error: unexpected end of input inside braces; want label matchers in braces, such as {run_id="r1"}`, ""},
		{`run_id="r1"`, `1:7: parse error: unexpected "="; want label matchers in braces, such as {run_id="r1"}`, ""},
		{`{run_id="r1"}[5m]`, `1:14: parse error: unexpected "["; want label matchers in braces, such as {run_id="r1"}`, ""},
		{`{run_id="r1"} or {run_id="r2"}`, `1:15: parse error: unexpected <op:or>; want label matchers in braces, such as {run_id="r1"}`, ""},
		{``, `unknown position: parse error: unexpected end of input; want label matchers in braces, such as {run_id="r1"}`, ""},
		{`slowlab_processes{run_id="r1"}`, `matches the metric name (__name__="slowlab_processes"); want label matchers only, such as {run_id="r1"}: the queries name their own metrics`, ""},
		{`{__name__=~"slowlab_.*",run_id="r1"}`, `matches the metric name (__name__=~"slowlab_.*"); want label matchers only, such as {run_id="r1"}: the queries name their own metrics`, ""},
		{`{}`, `every matcher matches an empty label, so it selects the series of every run and every other exporter; want one that needs a value, such as {run_id="r1"}`, ""},
		{`{run_id=~".*",job!="x"}`, `every matcher matches an empty label, so it selects the series of every run and every other exporter; want one that needs a value, such as {run_id="r1"}`, ""},
	} {
		sel, err := ParseSelector(tc.in)
		got := sel.String()
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("ParseSelector(%s):\ngot  %s\nwant %s", tc.in, got, tc.want)
		}
		if id, ok := sel.RunID(); id != tc.runID || ok != (tc.runID != "") {
			t.Errorf("ParseSelector(%s).RunID() = %q, %v; want %q", tc.in, id, ok, tc.runID)
		}
	}
	if got := RunSelector("r 1").String(); got != `{run_id="r 1"}` {
		t.Errorf("RunSelector: %s", got)
	}
}

func TestQueryRangeErrors(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	run := RunSelector("r")
	for _, tc := range []struct {
		url        string
		sel        Selector
		start, end time.Time
		step       time.Duration
		want       string
	}{
		{"http://127.0.0.1:1", Selector{}, now, now.Add(time.Second), time.Second, ErrNoSelector.Error()},
		{"http://127.0.0.1:1", RunSelector(""), now, now.Add(time.Second), time.Second, ErrNoSelector.Error()},
		{"http://127.0.0.1:1", run, now, now.Add(time.Second), 0, "prometheus query: step 0s: want 1ms or more"},
		{"http://127.0.0.1:1", run, now, now.Add(-time.Second), time.Second, "prometheus query: end 2026-01-02T03:04:04Z is before start 2026-01-02T03:04:05Z"},
		{"http://127.0.0.1:1", run, now, now.Add(time.Second), time.Second, "prometheus query_range for "},
	} {
		rows, err := QueryRange(ctx, tc.url, tc.sel, "r", tc.start, tc.end, tc.step)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("QueryRange(%s, %s, %v): %d rows, %v; want an error starting %q", tc.url, tc.sel, tc.step, len(rows), err, tc.want)
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
	addr := slowlabtest.FreeAddr(t)
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
		case <-time.After(30 * time.Second): // a clean shutdown only saves time; killing loses nothing
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
	waitFor(t, "prometheus at "+url+" to be ready", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("prometheus exited before it was ready: %v", err)
		default:
		}
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return url
}

// promClient is the Prometheus HTTP API at promURL.
func promClient(t *testing.T, promURL string) v1.API {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: promURL})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(client)
}

// waitForTarget waits until query returns 1 at promURL: Prometheus sends
// discovered targets to its scrape loop only every 5 s, so being ready is
// not yet scraping.
func waitForTarget(t *testing.T, promURL, query string) {
	t.Helper()
	prom := promClient(t, promURL)
	waitFor(t, query+" to be 1", func() (bool, string) {
		v, _, _, err := prom.Query(t.Context(), query, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1 && vec[0].Value == 1, fmt.Sprintf("%v, %v", v, err)
	})
}

// scrapedSince reports whether Prometheus has at least n samples of the
// app's memory since start, at now, from each of the runs.
func scrapedSince(ctx context.Context, prom v1.API, start, now time.Time, n int, runs ...string) bool {
	q := fmt.Sprintf(`sum by (%s) (count_over_time(%s{%s="app"}[%dms]))`,
		RunLabel, metricMemoryUsage, groupLabel, max(1, now.Sub(start).Milliseconds()))
	v, _, _, err := prom.Query(ctx, q, now)
	vec, ok := v.(model.Vector)
	if err != nil || !ok {
		return false
	}
	counts := map[string]float64{}
	for _, s := range vec {
		counts[string(s.Metric[RunLabel])] = float64(s.Value)
	}
	for _, r := range runs {
		if counts[r] < float64(n) {
			return false
		}
	}
	return true
}

// TestQueryRangeRealPrometheus has a real Prometheus scrape the run's
// exporter stand-in and another run's, with the same group names and
// other values, every 200 ms, labelled run_id like the lab's targets file
// does, while the Sampler scrapes the run's directly; then it reads the
// run back with QueryRange. The app's CPU counter grows at one second per
// second, so each value says which scrape it came from, and every step is
// checked against the raw samples Prometheus stored, not against a guess
// of when the scrapes happened.
func TestQueryRangeRealPrometheus(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it starts Prometheus")
	const (
		interval = 200 * time.Millisecond
		minTicks = 16
	)
	t0 := time.Now()
	series := fixtureSeries()
	delete(series, seriesKey{metricCgroupCPU, "app", ""})
	exp := newTestExporter(series)
	exp.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: metricCgroupCPU, Help: "test value", ConstLabels: prometheus.Labels{"group": "app"},
	}, func() float64 { return time.Since(t0).Seconds() }))
	srv := httptest.NewServer(exp.handler(true))
	defer srv.Close()
	otherSeries := fixtureSeries()
	for k, v := range otherSeries {
		otherSeries[k] = 1000 + 3*v
	}
	other := httptest.NewServer(newTestExporter(otherSeries).handler(true))
	defer other.Close()
	otherRows := directRows(t, other.URL)

	promURL := startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: slowlab
    static_configs:
      - targets: ['%[2]s']
        labels: {run_id: prom}
      - targets: ['%[3]s']
        labels: {run_id: other}
`, model.Duration(interval), strings.TrimPrefix(srv.URL, "http://"), strings.TrimPrefix(other.URL, "http://")))
	waitForTarget(t, promURL, `up{run_id="prom"}`)
	waitForTarget(t, promURL, `up{run_id="other"}`)
	prom := promClient(t, promURL)

	// Sample directly until Prometheus has scraped both runs a few times
	// since start and a tick due after that has been sampled too, so the
	// window holds those scrapes.
	start := time.Now().Truncate(time.Millisecond) // Prometheus keeps milliseconds
	var scrapedAt atomic.Int64                     // ns after start; -1 until then
	scrapedAt.Store(-1)
	pctx, stopPolling := context.WithCancel(testContext(t))
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pctx.Err() == nil {
			now := time.Now()
			if scrapedSince(pctx, prom, start, now, 3, "prom", "other") {
				scrapedAt.Store(int64(now.Sub(start)))
				return
			}
			select {
			case <-pctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { stopPolling(); <-polled })
	slot := func(tick []ResourceSample) int { return int(math.Floor(tick[0].TS/interval.Seconds() + 1e-9)) }
	s := &Sampler{URLs: []string{srv.URL}, Start: start, Interval: interval, RunID: "prom"}
	direct, _ := runUntil(t, s, func(ticks [][]ResourceSample) bool {
		at := scrapedAt.Load()
		return at >= 0 && len(ticks) >= minTicks && time.Duration(slot(ticks[len(ticks)-1]))*interval >= time.Duration(at)
	})
	checkSchedule(t, direct, interval, "prom")
	steps := slot(direct[len(direct)-1]) + 1
	end := start.Add(time.Duration(steps-1) * interval)

	// Every scrape up to end is stored once a later one is.
	appCPU := fmt.Sprintf(`%s{%s="prom",%s="app"}`, metricCgroupCPU, RunLabel, groupLabel)
	waitFor(t, "a sample after the window", func() (bool, string) {
		v, _, _, err := prom.Query(t.Context(), "timestamp("+appCPU+")", time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1 && float64(vec[0].Value) > float64(end.UnixMilli())/1000, fmt.Sprintf("%v, %v", v, err)
	})

	rows, err := QueryRange(context.Background(), promURL, RunSelector("prom"), "prom", start, end, interval)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != steps*len(Components) {
		t.Fatalf("got %d rows, want %d steps x %d components", len(rows), steps, len(Components))
	}
	raw := rawSamples(t, prom, appCPU, start.Add(-interval), end)
	withData := 0
	for k := range steps {
		step := rows[k*3 : k*3+3]
		if ts := (time.Duration(k) * interval).Seconds(); step[0].TS != ts || step[0].RunID != "prom" {
			t.Errorf("step %d: t_s %v run_id %q, want %v and prom", k, step[0].TS, step[0].RunID, ts)
		}
		// The app's CPU is the last sample Prometheus stored in the step
		// ending at t_s. Prometheus 2 ranges include their start and
		// Prometheus 3 ranges do not; a sample exactly there may be either.
		at := start.Add(time.Duration(k) * interval)
		cpu := step[0].CPUSeconds
		closed, open := lastIn(raw, at.Add(-interval), at, true), lastIn(raw, at.Add(-interval), at, false)
		if cpu != closed && cpu != open {
			t.Errorf("step %d: app cpu_seconds %s, want the last sample in the step, %s", k, showMaybe(cpu), showMaybe(closed))
		}
		if !cpu.Valid {
			checkTick(t, k, step, errorRows("", 0, Components[:], ErrNoPromSamples.Error()))
			continue
		}
		withData++
		// Everything else is constant and the run's own: nothing of the
		// other run's exporter is added.
		want := fixtureRows()
		want[0].CPUSeconds = cpu
		checkTick(t, k, step, want)
	}
	if withData == 0 {
		t.Errorf("no step has samples, though Prometheus had scraped the run 3 times within the window")
	}
	t.Logf("%d of %d steps have samples in Prometheus", withData, steps)

	// The rows scraped directly are the same, except for when the CPU
	// counter was read.
	for i, tick := range direct {
		if strings.HasPrefix(tick[0].Error, ErrTickSkipped.Error()) {
			continue
		}
		want := fixtureRows()
		want[0].CPUSeconds = tick[0].CPUSeconds
		if !tick[0].CPUSeconds.Valid {
			t.Errorf("tick %d: no app cpu_seconds", i)
		}
		checkTick(t, i, tick, want)
	}

	// Querying in pieces gives the same rows.
	defer func(n int) { maxStepsPerQuery = n }(maxStepsPerQuery)
	maxStepsPerQuery = 4
	pieces, err := QueryRange(context.Background(), promURL, RunSelector("prom"), "prom", start, end, interval)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffRows(rows, pieces); d != "" {
		t.Errorf("query in pieces of 4 steps: %s", d)
	}

	// A selector instead of the run_id picks the other exporter, and only
	// it; the rows get the run ID they are given.
	sel, err := ParseSelector(fmt.Sprintf(`{job="slowlab",instance=%q}`, strings.TrimPrefix(other.URL, "http://")))
	if err != nil {
		t.Fatal(err)
	}
	rows, err = QueryRange(context.Background(), promURL, sel, "B", start, end, interval)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != steps*len(Components) {
		t.Fatalf("selector %s: got %d rows, want %d", sel, len(rows), steps*len(Components))
	}
	withData = 0
	for k := range steps {
		step := rows[k*3 : k*3+3]
		if step[0].Error == ErrNoPromSamples.Error() {
			checkTick(t, k, step, errorRows("", 0, Components[:], ErrNoPromSamples.Error()))
			continue
		}
		withData++
		checkTick(t, k, step, otherRows)
		if step[0].RunID != "B" {
			t.Errorf("selector %s, step %d: run_id %q, want B", sel, k, step[0].RunID)
		}
	}
	if withData == 0 {
		t.Errorf("selector %s: no step has samples, though Prometheus had scraped the other run 3 times within the window", sel)
	}
}

// directRows scrapes url once and returns its rows.
func directRows(t *testing.T, url string) []ResourceSample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fams, err := ParseExposition(resp.Body, resp.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	return SamplesFromFamilies("", 0, Components[:], fams)
}

// rawSamples returns the samples Prometheus stored for the series query
// selects (exactly one) from..to.
func rawSamples(t *testing.T, prom v1.API, query string, from, to time.Time) []model.SamplePair {
	t.Helper()
	v, _, _, err := prom.Query(t.Context(), fmt.Sprintf("%s[%dms]", query, to.Sub(from).Milliseconds()), to)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(model.Matrix)
	if !ok || len(m) != 1 {
		t.Fatalf("%s: got %v, want one series", query, v)
	}
	return m[0].Values
}

// lastIn is the value of the last sample from..to, including from if
// closed, or None.
func lastIn(samples []model.SamplePair, from, to time.Time, closed bool) Maybe {
	last := None()
	for _, p := range samples {
		ts := p.Timestamp.Time()
		if ts.After(to) || ts.Before(from) || (!closed && ts.Equal(from)) {
			continue
		}
		last = Some(float64(p.Value))
	}
	return last
}

// TestQueryRangeDown checks that an unreachable Prometheus is an error, not
// empty rows.
func TestQueryRangeDown(t *testing.T) {
	addr := slowlabtest.FreeAddr(t)
	now := time.Now()
	_, err := QueryRange(context.Background(), "http://"+addr, RunSelector("r"), "r", now, now.Add(time.Second), DefaultInterval)
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("got %v, want a connection error", err)
	}
}
