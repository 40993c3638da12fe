package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// seriesKey names one exporter series; state is only for slowlab_processes.
// seriesKey is a series: its metric, group and other labels, as
// slowlab_processes's state ("R") or "name=value,..." for other metrics.
type seriesKey struct{ name, group, state string }

// testExporter stands in for `slowlab exporter`: a registry whose
// collector emits the contract metrics with hand-set values, counters for
// names ending in _total and gauges otherwise.
type testExporter struct {
	mu   sync.Mutex
	vals map[seriesKey]float64
	reg  *prometheus.Registry
}

func newTestExporter(vals map[seriesKey]float64) *testExporter {
	e := &testExporter{vals: vals, reg: prometheus.NewRegistry()}
	e.reg.MustRegister(e)
	return e
}

// Describe sends nothing: the series come and go, so the collector is
// unchecked.
func (e *testExporter) Describe(chan<- *prometheus.Desc) {}

func (e *testExporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range e.vals {
		names, values := []string{"group"}, []string{k.group}
		switch {
		case k.name == metricProcesses:
			names, values = append(names, "state"), append(values, k.state)
		case k.state != "":
			for _, kv := range strings.Split(k.state, ",") {
				name, value, _ := strings.Cut(kv, "=")
				names, values = append(names, name), append(values, value)
			}
		}
		vt := prometheus.GaugeValue
		if strings.HasSuffix(k.name, "_total") {
			vt = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(k.name, "test value", names, nil), vt, v, values...)
	}
}

func (e *testExporter) set(k seriesKey, v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vals[k] = v
}

// handler serves the registry like the exporter does.
func (e *testExporter) handler(openMetrics bool) http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{EnableOpenMetrics: openMetrics})
}

// fixtureSeries are the series of testdata/exposition-text.prom that
// matter, so the exporter's rows are fixtureRows.
func fixtureSeries() map[seriesKey]float64 {
	return map[seriesKey]float64{
		{metricCgroupCPU, "app", ""}: 12.345678, {metricProcessCPU, "app", ""}: 99,
		{metricThrottledPeriods, "app", ""}: 42, {metricThrottledSeconds, "app", ""}: 0.5,
		{metricMemoryUsage, "app", ""}: 104857600, {metricResidentMemory, "app", ""}: 52428800,
		{metricProcesses, "app", "R"}: 1, {metricProcesses, "app", "S"}: 2,
		{metricSendQueueBytes, "app", ""}:           16384,
		{metricSockets, "app", "state=established"}: 5, {metricSockets, "app", "state=time_wait"}: 7,
		{metricSocketsQuiet, "app", "quiet=10s,side=accepted"}: 2, {metricSocketsQuiet, "app", "quiet=60s,side=accepted"}: 1,
		{metricSocketsQuiet, "app", "quiet=10s,side=connected"}: 3,

		{metricCgroupCPU, "proxy", ""}: 3.25, {metricThrottledPeriods, "proxy", ""}: 7,
		{metricThrottledSeconds, "proxy", ""}: 0.07, {metricMemoryUsage, "proxy", ""}: 20971520,
		{metricResidentMemory, "proxy", ""}: 10485760, {metricProcesses, "proxy", "S"}: 1,
		{metricTempFiles, "proxy", ""}: 2, {metricTempLogicalBytes, "proxy", ""}: 33554432,
		{metricTempAllocatedBytes, "proxy", ""}: 33558528, {metricSendQueueBytes, "proxy", ""}: 2621440,

		{metricProcessCPU, "loadgen", ""}: 1.5, {metricResidentMemory, "loadgen", ""}: 31457280,
		{metricProcesses, "loadgen", "D"}: 1, {metricProcesses, "loadgen", "R"}: 1, {metricProcesses, "loadgen", "S"}: 3,
		{metricSendQueueBytes, "loadgen", ""}: 0,
		{metricSendQueueBytes, "other", ""}:   123,
	}
}

// runTicks runs s until it has delivered n ticks and returns the rows by
// tick. each, if set, runs after tick i's rows, before the next tick.
func runTicks(t *testing.T, s *Sampler, n int, each func(i int)) ([][]ResourceSample, Jitter) {
	t.Helper()
	return runUntil(t, s, func(ticks [][]ResourceSample) bool {
		if each != nil {
			each(len(ticks) - 1)
		}
		return len(ticks) == n
	})
}

// runUntil runs s until stop, called after each tick's rows with the ticks
// so far, returns true, and returns the rows by tick. It waits as long as
// a loaded machine takes to get there (up to testContext).
func runUntil(t *testing.T, s *Sampler, stop func(ticks [][]ResourceSample) bool) ([][]ResourceSample, Jitter) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	comps := len(s.Components)
	if s.Components == nil {
		comps = len(Components)
	}
	var ticks [][]ResourceSample
	var cur []ResourceSample
	stopped := false
	s.OnSample = func(r ResourceSample) error {
		if cur = append(cur, r); len(cur) < comps {
			return nil
		}
		ticks, cur = append(ticks, cur), nil
		if stop(ticks) {
			stopped = true
			cancel()
		}
		return nil
	}
	j, err := s.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !stopped {
		t.Fatalf("gave up after %d ticks: the test deadline is near", len(ticks))
	}
	return ticks, j
}

// checkSchedule checks that ticks are consecutive tick numbers and each
// row's TS is within half an interval after its tick's due time (exactly
// the due time for skipped ticks), and that every row has the run ID.
func checkSchedule(t *testing.T, ticks [][]ResourceSample, interval time.Duration, runID string) {
	t.Helper()
	iv := interval.Seconds()
	prev := -1
	for i, tick := range ticks {
		k := int(math.Floor(tick[0].TS/iv + 1e-9))
		if prev >= 0 && k != prev+1 {
			t.Errorf("tick %d is schedule slot %d, after slot %d", i, k, prev)
		}
		prev = k
		for _, r := range tick {
			late := r.TS - float64(k)*iv
			if r.TS != tick[0].TS || late < -1e-9 || late > iv/2 {
				t.Errorf("tick %d %s: t_s %.4f, slot %d due at %.4f", i, r.Component, r.TS, k, float64(k)*iv)
			}
			if r.RunID != runID {
				t.Errorf("tick %d: run_id %q, want %q", i, r.RunID, runID)
			}
			if strings.HasPrefix(r.Error, ErrTickSkipped.Error()) && math.Abs(late) > 1e-9 {
				t.Errorf("skipped tick %d: t_s %.4f is not its due time", i, r.TS)
			}
		}
	}
}

// checkTick compares a tick's rows with want, ignoring TS.
func checkTick(t *testing.T, i int, got, want []ResourceSample) {
	t.Helper()
	want = append([]ResourceSample(nil), want...)
	for j := range want {
		if j < len(got) {
			want[j].TS, want[j].RunID = got[j].TS, got[j].RunID
		}
	}
	if d := diffRows(want, got); d != "" {
		t.Errorf("tick %d: %s", i, d)
	}
}

// loadArtifact reports whether a tick's rows were shaped by the machine's
// load rather than by the test: skipped because the tick could not start
// on time, or cut by a timeout the test did not arrange. Tests wait for as
// many other ticks as they need instead of assuming how fast the machine
// is.
func loadArtifact(tick []ResourceSample) bool {
	return skipped(tick) || strings.Contains(tick[0].Error, ": timed out after ")
}

// skipped reports whether the Sampler skipped the tick.
func skipped(tick []ResourceSample) bool {
	return strings.HasPrefix(tick[0].Error, ErrTickSkipped.Error())
}

// measured counts the ticks that are not load artifacts.
func measured(ticks [][]ResourceSample) int {
	n := 0
	for _, tick := range ticks {
		if !loadArtifact(tick) {
			n++
		}
	}
	return n
}

// checkJitter checks that the jitter accounts for every tick and that no
// scraped tick started more than half an interval late (it would have been
// skipped).
func checkJitter(t *testing.T, j Jitter, ticks int, interval time.Duration) {
	t.Helper()
	if len(j.Samples)+j.Skipped != ticks {
		t.Errorf("jitter has %d samples and %d skipped, want %d ticks", len(j.Samples), j.Skipped, ticks)
	}
	for _, d := range j.Samples {
		if d < 0 || d > interval/2 {
			t.Errorf("jitter sample %v outside [0, interval/2]", d)
		}
	}
}

func TestSamplerRowsMatchExporter(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it samples an exporter for seconds")
	exp := newTestExporter(fixtureSeries())
	openMetricsOnly := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile("testdata/exposition-openmetrics.txt")
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", contentTypeOpenMetrics)
		w.Write(data)
	})
	// On a loaded machine any tick may be skipped or time out; the rows
	// measured must still be exact, so each case runs until it has that
	// many. expfmt's OpenMetrics parser needs 100-200 ms for this page
	// (more under load), hence its longer interval.
	for _, tc := range []struct {
		name     string
		handler  http.Handler
		interval time.Duration
		ticks    int // measured ones
	}{
		{"negotiating exporter", exp.handler(true), 50 * time.Millisecond, 4},
		{"text-only exporter", exp.handler(false), 50 * time.Millisecond, 4},
		{"OpenMetrics-only target", openMetricsOnly, 500 * time.Millisecond, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parseFixture(t, "exposition-openmetrics.txt", contentTypeOpenMetrics) // builds the grammar once
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			s := &Sampler{URLs: []string{srv.URL + "/metrics"}, Interval: tc.interval, Timeout: 2 * tc.interval, RunID: "r1"}
			ticks, j := runUntil(t, s, func(ticks [][]ResourceSample) bool { return measured(ticks) == tc.ticks })
			checkSchedule(t, ticks, tc.interval, "r1")
			for i, tick := range ticks {
				if !loadArtifact(tick) {
					checkTick(t, i, tick, fixtureRows())
				}
			}
			checkJitter(t, j, len(ticks), tc.interval)
		})
	}
}

// TestNegotiatedFormat checks what the exporter sends for AcceptHeader:
// the text format, which is cheap to parse.
func TestNegotiatedFormat(t *testing.T) {
	srv := httptest.NewServer(newTestExporter(fixtureSeries()).handler(true))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", AcceptHeader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
}

// TestSamplerServerGap stops the exporter after 3 measured ticks and
// starts it again on the same address after 4 ticks that found it down:
// those ticks are error rows with no values, and sampling resumes with the
// new values. Phases follow the ticks seen, not the clock, so a tick
// skipped on a loaded machine changes nothing.
func TestSamplerServerGap(t *testing.T) {
	slowlabtest.Timing(t)
	exp := newTestExporter(fixtureSeries())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{Handler: exp.handler(true)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	const interval = 50 * time.Millisecond
	const (
		up = iota
		down
		upAgain
	)
	var phases []int // of each tick
	phase, inPhase := up, 0
	s := &Sampler{URLs: []string{"http://" + addr + "/metrics"}, Interval: interval, RunID: "gap"}
	ticks, j := runUntil(t, s, func(ticks [][]ResourceSample) bool {
		phases = append(phases, phase)
		if loadArtifact(ticks[len(ticks)-1]) {
			return false
		}
		inPhase++
		switch {
		case phase == up && inPhase == 3:
			srv.Close()
			phase, inPhase = down, 0
		case phase == down && inPhase == 4:
			exp.set(seriesKey{metricCgroupCPU, "app", ""}, 20)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return true
			}
			srv = &http.Server{Handler: exp.handler(true)}
			go srv.Serve(ln)
			phase, inPhase = upAgain, 0
		case phase == upAgain && inPhase == 3:
			return true
		}
		return false
	})
	checkSchedule(t, ticks, interval, "gap")
	resumed := fixtureRows()
	resumed[0].CPUSeconds = Some(20)
	for i, tick := range ticks {
		switch {
		case loadArtifact(tick):
			checkTick(t, i, tick, errorRows("", 0, Components[:], tick[0].Error))
		case phases[i] == up:
			checkTick(t, i, tick, fixtureRows())
		case phases[i] == down:
			for _, r := range tick {
				if !strings.Contains(r.Error, "connection refused") {
					t.Errorf("tick %d %s: error %q, want connection refused", i, r.Component, r.Error)
				}
			}
			checkTick(t, i, tick, errorRows("", 0, Components[:], tick[0].Error))
		default:
			checkTick(t, i, tick, resumed)
		}
	}
	checkJitter(t, j, len(ticks), interval)
}

// hangOnce serves exp but holds the request numbered n (from 0) until
// the client gives up, then closes released.
func hangOnce(exp *testExporter, n int64, released chan<- struct{}) http.Handler {
	var count atomic.Int64
	h := exp.handler(false)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count.Add(1)-1 == n {
			<-r.Context().Done()
			close(released)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestSamplerTimeout holds one scrape until the Sampler gives up: that
// tick's rows carry the timeout, which defaults to the interval, and the
// schedule goes on. (Whether the next tick then starts within half an
// interval depends on the machine's load, so it is not asserted; any tick
// may be skipped, and a loaded machine may time out others the same way.)
func TestSamplerTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	released := make(chan struct{})
	srv := httptest.NewServer(hangOnce(newTestExporter(fixtureSeries()), 2, released))
	defer srv.Close()
	const interval = 50 * time.Millisecond
	s := &Sampler{URLs: []string{srv.URL}, Interval: interval, RunID: "slow"}
	after := 0
	ticks, j := runUntil(t, s, func(ticks [][]ResourceSample) bool {
		if isClosed(released) && !loadArtifact(ticks[len(ticks)-1]) {
			after++
		}
		return after == 2
	})
	checkSchedule(t, ticks, interval, "slow")
	timeout := "scrape " + srv.URL + ": timed out after 50ms"
	timedOut := 0
	for i, tick := range ticks {
		switch {
		case skipped(tick):
			checkTick(t, i, tick, errorRows("", 0, Components[:], tick[0].Error))
		case tick[0].Error != "":
			timedOut++
			checkTick(t, i, tick, errorRows("", 0, Components[:], timeout))
		default:
			checkTick(t, i, tick, fixtureRows())
		}
	}
	if timedOut == 0 {
		t.Errorf("no tick timed out, though the server held a request until the Sampler gave up")
	}
	checkJitter(t, j, len(ticks), interval)
}

// TestSamplerSkipsRatherThanBunches: a scrape that hangs for 3.7
// intervals overlaps the next three ticks' due times; they are skipped
// (rows at their due times) rather than run late, and the schedule
// resumes. That holds for any scrape that times out, whatever the load:
// the third tick is due 70 ms before the timeout ends.
func TestSamplerSkipsRatherThanBunches(t *testing.T) {
	slowlabtest.Timing(t)
	released := make(chan struct{})
	srv := httptest.NewServer(hangOnce(newTestExporter(fixtureSeries()), 2, released))
	defer srv.Close()
	const interval = 100 * time.Millisecond
	s := &Sampler{URLs: []string{srv.URL}, Interval: interval, Timeout: 370 * time.Millisecond, RunID: "skip", Components: []string{"proxy"}}
	after := 0
	ticks, j := runUntil(t, s, func(ticks [][]ResourceSample) bool {
		if isClosed(released) && !loadArtifact(ticks[len(ticks)-1]) {
			after++
		}
		return after == 2
	})
	checkSchedule(t, ticks, interval, "skip")
	timeout := "scrape " + srv.URL + ": timed out after 370ms"
	timedOut := 0
	for i, tick := range ticks {
		switch {
		case skipped(tick):
			if !strings.HasSuffix(tick[0].Error, " late, the previous tick overran") {
				t.Errorf("tick %d: error %q, want a skipped tick", i, tick[0].Error)
			}
			checkTick(t, i, tick, errorRows("", 0, []string{"proxy"}, tick[0].Error))
		case tick[0].Error != "":
			timedOut++
			checkTick(t, i, tick, errorRows("", 0, []string{"proxy"}, timeout))
			for k := i + 1; k <= i+3; k++ {
				if k >= len(ticks) || !skipped(ticks[k]) {
					t.Errorf("tick %d, due during the timeout of tick %d, was not skipped", k, i)
				}
			}
		default:
			checkTick(t, i, tick, fixtureRows()[1:2])
		}
	}
	if timedOut == 0 || j.Skipped < 3 {
		t.Errorf("%d ticks timed out and %d were skipped, want at least 1 and 3", timedOut, j.Skipped)
	}
	checkJitter(t, j, len(ticks), interval)
}

// TestSamplerSeveralTargets scrapes the exporter, a second endpoint and
// one that fails: the rows keep what was measured and name the failure.
func TestSamplerSeveralTargets(t *testing.T) {
	slowlabtest.Timing(t)
	exp := httptest.NewServer(newTestExporter(fixtureSeries()).handler(true))
	defer exp.Close()
	other := newTestExporter(map[seriesKey]float64{
		{metricSendQueueBytes, "app", ""}: 1,  // the exporter has it: ignored
		{metricTempFiles, "app", ""}:      5,  // only here: used
		{metricProcessCPU, "proxy", ""}:   77, // the exporter has cgroup CPU: ignored
	})
	second := httptest.NewServer(other.handler(false))
	defer second.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()

	s := &Sampler{URLs: []string{exp.URL, second.URL, missing.URL + "/metrics"}, Interval: 50 * time.Millisecond, RunID: "many"}
	var scrapes []Scrape
	s.OnScrape = func(sc Scrape) { scrapes = append(scrapes, sc) }
	ticks, j := runUntil(t, s, func(ticks [][]ResourceSample) bool { return measured(ticks) == 2 })
	want := fixtureRows()
	want[0].TempFiles = Some(5)
	for i := range want {
		want[i].Error = "scrape " + missing.URL + "/metrics: HTTP 404 Not Found"
	}
	for i, tick := range ticks {
		if !loadArtifact(tick) {
			checkTick(t, i, tick, want)
		}
	}
	if len(scrapes) != 3*len(j.Samples) {
		t.Fatalf("OnScrape called %d times, want 3 targets x %d ticks scraped", len(scrapes), len(j.Samples))
	}
	for _, sc := range scrapes {
		if sc.Err != nil && strings.Contains(sc.Err.Error(), "timed out after ") && sc.URL != missing.URL+"/metrics" {
			continue // the machine's load, as loadArtifact says of a tick; runUntil waited for two measured ticks
		}
		if (sc.Err != nil) != (sc.URL == missing.URL+"/metrics") || (sc.Err == nil) != (sc.Families != nil) {
			t.Errorf("scrape of %s: families %d, err %v", sc.URL, len(sc.Families), sc.Err)
		}
		if sc.Start.Before(sc.Due) || sc.Duration <= 0 {
			t.Errorf("scrape of %s: due %v, start %v, duration %v", sc.URL, sc.Due, sc.Start, sc.Duration)
		}
	}
}

// TestSamplerStart checks the anchor: with Start in the past the first
// tick is the one due within half an interval of when Run was called, with
// Start ahead nothing is sampled before it. Run is called some time between
// before and the first tick's rows, so the bounds hold however long that
// takes.
func TestSamplerStart(t *testing.T) {
	slowlabtest.Timing(t)
	srv := httptest.NewServer(newTestExporter(fixtureSeries()).handler(true))
	defer srv.Close()
	const interval = 100 * time.Millisecond
	for _, offset := range []time.Duration{-1020 * time.Millisecond, 150 * time.Millisecond} { // Start - now
		before := time.Now()
		s := &Sampler{URLs: []string{srv.URL}, Interval: interval, Start: before.Add(offset), Components: []string{"app"}}
		var seen []time.Time
		ticks, _ := runUntil(t, s, func(ticks [][]ResourceSample) bool {
			seen = append(seen, time.Now())
			return len(ticks) == 2
		})
		checkSchedule(t, ticks, interval, "")
		due := s.Start.Add(time.Duration(math.Floor(ticks[0][0].TS/interval.Seconds()+1e-9)) * interval)
		earliest := before.Add(-interval / 2)
		if s.Start.After(earliest) {
			earliest = s.Start
		}
		if due.Before(earliest) || !due.Before(seen[0].Add(interval/2)) {
			t.Errorf("Start %v from now: first tick due %v after Start, want from %v (Run called, less half an interval, or Start) to before %v (first rows plus half an interval)",
				offset, due.Sub(s.Start), earliest.Sub(s.Start), seen[0].Add(interval/2).Sub(s.Start))
		}
		if seen[0].Before(s.Start) || seen[1].Before(s.Start.Add(interval)) {
			t.Errorf("Start %v from now: ticks at %v and %v after Start, want none before their due times",
				offset, seen[0].Sub(s.Start), seen[1].Sub(s.Start))
		}
	}
}

func TestSamplerStopsOnWriteError(t *testing.T) {
	slowlabtest.Timing(t)
	srv := httptest.NewServer(newTestExporter(fixtureSeries()).handler(true))
	defer srv.Close()
	full := errors.New("no space left on device")
	calls := 0
	s := &Sampler{URLs: []string{srv.URL}, Interval: 20 * time.Millisecond, OnSample: func(ResourceSample) error {
		calls++
		return full
	}}
	if _, err := s.Run(testContext(t)); !errors.Is(err, full) || calls != 1 {
		t.Errorf("Run: %v after %d rows, want %v after the first", err, calls, full)
	}
}

func TestSamplerConfigErrors(t *testing.T) {
	slowlabtest.Timing(t)
	ok := func(ResourceSample) error { return nil }
	for _, tc := range []struct {
		s    Sampler
		want string
	}{
		{Sampler{OnSample: ok}, "sampler: no URLs to scrape"},
		{Sampler{URLs: []string{"127.0.0.1:9817"}, OnSample: ok}, `sampler: URL "127.0.0.1:9817": want http://HOST:PORT/PATH`},
		{Sampler{URLs: []string{"http://127.0.0.1:1/"}, Interval: -time.Second, OnSample: ok}, "sampler: interval -1s and timeout -1s: want positive durations"},
		{Sampler{URLs: []string{"http://127.0.0.1:1/"}}, "sampler: OnSample is required"},
	} {
		if _, err := tc.s.Run(context.Background()); err == nil || err.Error() != tc.want {
			t.Errorf("Run: %v, want %q", err, tc.want)
		}
	}
}

func TestJitter(t *testing.T) {
	var j Jitter
	if j.Percentile(50) != 0 || j.Percentile(99) != 0 || j.Percentile(100) != 0 {
		t.Errorf("empty jitter: %v", j)
	}
	if got := (Jitter{Skipped: 2}).String(); got != "no scrapes, 2 ticks skipped" {
		t.Errorf("empty String: %q", got)
	}
	for i := 100; i >= 1; i-- {
		j.Samples = append(j.Samples, time.Duration(i)*time.Microsecond)
	}
	if j.Percentile(50) != 50*time.Microsecond || j.Percentile(99) != 99*time.Microsecond || j.Percentile(100) != 100*time.Microsecond {
		t.Errorf("1..100 µs: %v", j)
	}
	if got := j.String(); got != "p50 50µs p99 99µs max 100µs over 100 scrapes, 0 ticks skipped" {
		t.Errorf("String: %q", got)
	}
}

// TestSamplerJitterReport measures scheduling jitter against a local
// exporter stand-in for SLOWLAB_JITTER_DURATION (e.g. 30s) at 200 ms; it
// reports, it does not judge.
func TestSamplerJitterReport(t *testing.T) {
	slowlabtest.Timing(t)
	d, err := time.ParseDuration(os.Getenv("SLOWLAB_JITTER_DURATION"))
	if err != nil {
		t.Skip("set SLOWLAB_JITTER_DURATION=30s to measure sampling jitter")
	}
	srv := httptest.NewServer(newTestExporter(fixtureSeries()).handler(true))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s := &Sampler{URLs: []string{srv.URL}, OnSample: func(ResourceSample) error { return nil }}
	j, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("interval %v for %v: jitter %v", DefaultInterval, d, j)
}

// TestSamplerCutsSlowParse serves an endless OpenMetrics page, which
// expfmt parses slowly: the scrape ends when it times out instead of
// reading and parsing on, so the ticks come (a scrape that was not cut
// would never end, and the test would fail at its deadline).
func TestSamplerCutsSlowParse(t *testing.T) {
	slowlabtest.Timing(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentTypeOpenMetrics)
		io.WriteString(w, "# TYPE slowlab_processes gauge\n")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "slowlab_processes{group=\"app\",state=\"S%d\"} 1\n", i); err != nil {
				return // the Sampler hung up
			}
		}
	}))
	defer srv.Close()
	parseFixture(t, "exposition-openmetrics.txt", contentTypeOpenMetrics) // builds the grammar once
	s := &Sampler{URLs: []string{srv.URL}, Interval: 500 * time.Millisecond, Timeout: 100 * time.Millisecond, Components: []string{"app"}}
	ticks, _ := runTicks(t, s, 2, nil)
	for i, tick := range ticks {
		if want := "scrape " + srv.URL + ": timed out after 100ms"; tick[0].Error != want && !skipped(tick) {
			t.Errorf("tick %d: error %q, want %q", i, tick[0].Error, want)
		}
		checkTick(t, i, tick, errorRows("", 0, []string{"app"}, tick[0].Error))
	}
}
