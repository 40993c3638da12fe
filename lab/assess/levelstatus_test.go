package assess

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestSummarizeRedirectFails: a /fast answer that is not 2xx fails, a
// redirect too.
func TestSummarizeRedirectFails(t *testing.T) {
	w := summarize([]recorder.Request{{Status: 200, LatencyMS: 1}, {Status: 302, LatencyMS: 1}})
	if w.Sent != 2 || w.OK != 1 || w.Failed != 1 || w.FirstError != "status 302" {
		t.Errorf("summarize = %+v, want 1 ok and 1 failed (status 302)", w)
	}
}

// TestInvalidWhyThrottledBound: the load generator throttled over 10 ms
// invalidates the window; 10 ms does not.
func TestInvalidWhyThrottledBound(t *testing.T) {
	for thr, invalid := range map[float64]bool{0.010: false, 0.011: true} {
		lv := Level{LoadgenThrottledS: &thr}
		if got := invalidWhy(&lv, DefaultMaxLag, ""); (got != "") != invalid {
			t.Errorf("throttled %.3f s: %q, want invalid %v", thr, got, invalid)
		}
	}
}

// TestGeneratorOverThrottling: a level's throttling is the growth of the
// cgroup's counter over it, never negative.
func TestGeneratorOverThrottling(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct{ a, b, want float64 }{{2.0, 2.05, 0.05}, {2.0, 2.0, 0}, {2.0, 1.0, 0}} {
		var lv Level
		generatorOver(&lv, selfReading{cpu: 1, throttled: f(tc.a)}, selfReading{cpu: 1.5, throttled: f(tc.b)})
		if lv.LoadgenThrottledS == nil || math.Abs(*lv.LoadgenThrottledS-tc.want) > 1e-9 || *lv.LoadgenCPUS != 0.5 {
			t.Errorf("throttled %v then %v: %v s (CPU %v), want %v", tc.a, tc.b, lv.LoadgenThrottledS, *lv.LoadgenCPUS, tc.want)
		}
	}
}

// TestMeasuredShortOfClients: a level with fewer clients connected at its
// window's start than its share is short; all of them, not.
func TestMeasuredShortOfClients(t *testing.T) {
	c := quick("sync-1", stack.RouteDirect, 4, ProbeIdle)
	c.Offset, c.Window = 0, lab.Duration(time.Millisecond)
	r := &run{cfg: c, env: &lab.Env{}, probe: ProbeIdle, maxLag: DefaultMaxLag}
	for live, short := range map[int]bool{2: true, 3: true, 4: false, 5: false} {
		lv := Level{Clients: 4}
		if err := r.measured(context.Background(), &lv, time.Millisecond, &crowd{n: 4, live: live}, slot{share: 4}); err != nil {
			t.Fatal(err)
		}
		if (lv.Status == statusShort) != short || lv.Connected != live {
			t.Errorf("%d of 4 connected: status %q, connected %d; want short %v", live, lv.Status, lv.Connected, short)
		}
	}
}

// fastServer serves /fast, failing the requests fail says (by their
// order, from 1) with a 500, each after delay.
func fastServer(t *testing.T, delay time.Duration, fail func(n int64) bool) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			select {
			case <-r.Context().Done():
			case <-time.After(delay):
			}
		}
		if fail(n.Add(1)) {
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runOn is a probe's run against srv's /fast.
func runOn(t *testing.T, srv *httptest.Server) *run {
	reqs, err := recorder.CreateFile[recorder.Request](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reqs.Close() })
	return &run{cfg: quick("sync-1", stack.RouteDirect, 1, ProbeIdle), env: &lab.Env{}, probe: ProbeIdle, reqs: reqs, fastTimeout: 5 * time.Second,
		t0: time.Now(), t: targets{fast: srv.URL + "/fast", front: srv.Listener.Addr().String()}, maxLag: DefaultMaxLag}
}

// TestBaselineRule: a baseline with one /fast request failed cannot be
// assessed; a sound one sets the levels' /fast timeout to twice the
// threshold of its p95.
func TestBaselineRule(t *testing.T) {
	// The schedule's lag is not the rule judged here (a starved window's
	// is, in TestBaselineOfAStarvedGenerator): a loaded host's must not
	// make these windows invalid.
	unlagged := func(r *run) *run { r.maxLag = time.Minute; return r }
	r := unlagged(runOn(t, fastServer(t, 0, func(n int64) bool { return n == 1 })))
	var v Verdict
	if _, ok, err := r.baseline(context.Background(), &v, time.Now()); ok || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "failed 1 of") {
		t.Errorf("one baseline request failed: ok %v, err %v; want ErrUnavailable", ok, err)
	}
	r = unlagged(runOn(t, fastServer(t, 0, func(int64) bool { return false })))
	p95, ok, err := r.baseline(context.Background(), &v, time.Now())
	if !ok || err != nil || r.fastTimeout != 2*Threshold(p95) || v.BaselineP95MS != msf(p95) {
		t.Errorf("sound baseline: ok %v, err %v, p95 %s, /fast timeout %s; want twice %s", ok, err, p95, r.fastTimeout, Threshold(p95))
	}
}

// TestRecoveredUnderThreshold: /fast is back only when a request answers
// within the threshold; one slower than it, however close, is not.
func TestRecoveredUnderThreshold(t *testing.T) {
	base := time.Millisecond // threshold: 501 ms
	r := runOn(t, fastServer(t, Threshold(base)+100*time.Millisecond, func(int64) bool { return false }))
	if back, why := r.recovered(context.Background(), base, time.Millisecond); back || why != "" {
		t.Errorf("/fast answering over the threshold: back %v (%q), want not back", back, why)
	}
	r = runOn(t, fastServer(t, 0, func(n int64) bool { return n == 1 }))
	if back, why := r.recovered(context.Background(), base, time.Minute); !back || why != "" {
		t.Errorf("/fast failing once, then answering: back %v (%q), want back", back, why)
	}
}

// TestCPUBoundQuarter: a component throttled over a quarter of the level
// is blamed for it; a quarter, not.
func TestCPUBoundQuarter(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		app, proxy float64
		want       string
	}{{1.0, 0, ""}, {1.1, 0, "app"}, {1.1, 1.2, "proxy"}, {0, 1.9, "proxy"}} {
		if got, _ := cpuBound(Held{LevelS: 4, AppThrottledS: f(tc.app), ProxyThrottledS: f(tc.proxy)}); got != tc.want {
			t.Errorf("app throttled %.1f s, proxy %.1f s of 4 s: %q, want %q", tc.app, tc.proxy, got, tc.want)
		}
	}
}

// TestRecoveredWaitStarved: a wait for /fast that failed while the load
// generator's own cgroup was throttled over a valid window's bound says
// why (the instrument, not the stack: an invalid try, never "not
// recovered"); one that failed unthrottled blames nothing but the stack.
func TestRecoveredWaitStarved(t *testing.T) {
	for _, tc := range []struct {
		throttledUS int // the cgroup's throttling a /fast request
		why         string
	}{{20000, "throttled 0.020 s"}, {0, ""}} {
		dir := t.TempDir()
		stat := func(us int) {
			if err := os.WriteFile(filepath.Join(dir, "cpu.stat"), fmt.Appendf(nil, "usage_usec 1000\nthrottled_usec %d\n", us), 0o644); err != nil {
				t.Error(err)
			}
		}
		stat(0)
		base := time.Millisecond // threshold: 501 ms
		var throttled atomic.Int64
		srv := fastServer(t, Threshold(base)+100*time.Millisecond, func(int64) bool {
			stat(int(throttled.Add(int64(tc.throttledUS))))
			return false
		})
		r := runOn(t, srv)
		r.self = selfMeter{layout: cgroup.Layout{Mode: cgroup.V2, Unified: dir}, path: "/", ok: true}
		back, why := r.recovered(context.Background(), base, time.Millisecond)
		if back || (why == "") != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("throttled %d µs a request: back %v, %q; want not back, %q", tc.throttledUS, back, why, tc.why)
		}
	}
}
