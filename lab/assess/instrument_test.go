package assess

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestInvalidWhy: each way a window says nothing of the stack is named;
// a valid one is "".
func TestInvalidWhy(t *testing.T) {
	thr := func(s float64) *float64 { return &s }
	for _, tc := range []struct {
		name string
		lv   Level
		busy string
		want string
	}{
		{"valid", Level{LoadgenThrottledS: thr(0.005), FastLagMaxMS: 40}, "", ""},
		{"no cgroup figure", Level{FastLagMaxMS: 40}, "", ""},
		{"throttled", Level{LoadgenThrottledS: thr(0.05)}, "", "throttled 0.050 s"},
		{"late", Level{FastLagMaxMS: 300}, "", "started 300 ms behind its schedule, over 250.0 ms"},
		{"host busy", Level{}, "host CPU 97% above", "host busy: host CPU 97%"},
	} {
		if got := invalidWhy(&tc.lv, DefaultMaxLag, tc.busy); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestThrottledGeneratorInvalidatesLevels runs real levels of a slow
// reader against a one-worker server, the load generator (this
// process) in a cgroup of 0.1 CPU that a spinning goroutine keeps
// throttled: every level is invalid, and so is every wait for /fast to
// come back that fails, tried maxTries times in all, and the probe ends
// without a verdict, never "not recovered". The same search outside the cgroup finds the
// threshold (1): the rule tells the two apart.
func TestThrottledGeneratorInvalidatesLevels(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "a cgroup for the load generator")
	slowlabtest.NothingLeft(t)
	srv := syncOne(t, 0)
	search := func() Verdict {
		c := quick("sync-1", stack.RouteDirect, 1, ProbeSlowReaders)
		reqs, err := recorder.CreateFile[recorder.Request](t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer reqs.Close()
		large, _ := url.Parse(srv.URL + "/large")
		r := &run{cfg: c, env: &lab.Env{}, probe: ProbeSlowReaders, reqs: reqs, fastTimeout: time.Second, t0: time.Now(),
			t:      targets{fast: srv.URL + "/fast", front: srv.Listener.Addr().String(), large: large, largeSize: 64 << 20},
			maxLag: DefaultMaxLag, self: newSelfMeter("", "")}
		if !r.self.ok {
			t.Fatal("this process's cgroup not found")
		}
		v := Verdict{Probe: string(ProbeSlowReaders), MaxClients: 1}
		c.levels(context.Background(), &lab.Env{}, r, &v, 5*time.Millisecond, time.Now().Add(5*time.Minute))
		for _, lv := range v.Levels {
			t.Logf("%d clients: %s %s; CPU %s s, throttled %s s, lag %.1f ms", lv.Clients, lv.Status, lv.Invalid,
				orNone(lv.LoadgenCPUS), orNone(lv.LoadgenThrottledS), lv.FastLagMaxMS)
		}
		return v
	}

	self, err := cgroup.PrepareSelf("", stack.CgroupName("assess-throttled", "loadgen"), cgroup.Limits{CPUCores: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Enter(); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { slowlabtest.Spin(ctx) })
	throttled := search()
	stop()
	wg.Wait()
	if err := self.Release(); err != nil {
		t.Fatal(err)
	}
	// Each try is a level or, after the first, a wait for /fast to come
	// back: one the throttling starved is an invalid try too.
	if n := len(throttled.Levels); n < 1 || n > maxTries || throttled.ClientsToDegrade != nil ||
		!strings.HasPrefix(throttled.Stopped, "invalid") || !strings.Contains(throttled.Stopped, "throttled") {
		t.Errorf("throttled: %d levels, threshold %v, %q; want 1 to %d invalid levels, no verdict, stopped invalid for the throttling",
			n, throttled.ClientsToDegrade, throttled.Stopped, maxTries)
	}
	for _, lv := range throttled.Levels {
		if lv.Status != statusInvalid || !strings.Contains(lv.Invalid, "throttled") {
			t.Errorf("throttled: level %d %s %q, want invalid for the throttling", lv.Clients, lv.Status, lv.Invalid)
		}
	}
	free := search()
	if free.ClientsToDegrade == nil || *free.ClientsToDegrade != 1 || free.Sure != "confirmed" {
		t.Errorf("outside the cgroup: threshold %v %s (%s), want 1 confirmed", free.ClientsToDegrade, free.Sure, free.Stopped)
	}
	for _, lv := range free.Levels {
		if lv.Status == statusInvalid {
			t.Errorf("outside the cgroup: level %d invalid: %s", lv.Clients, lv.Invalid)
		}
	}
}
