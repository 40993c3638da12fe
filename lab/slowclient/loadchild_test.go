package slowclient

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/loadchild"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// The slow readers and /fast run in a load generator of their own
// (`slowlab slow-load`), alone in the load generator's cgroup with its
// limits; the session, which samples the hops and the resources and
// writes the rows, is not in it (it was: its sampling was throttled to
// the load generator's 0.2 CPU, and its memory counted against 128 MiB).
func TestSlowLoadRunsOutsideTheSession(t *testing.T) {
	slowlabtest.Timing(t)
	env := testEnv(t, stack.NameEmbedded)
	slowlabtest.Require(t, env.Stack.Cgroups, "cgroups are not usable (root with a cgroup hierarchy)")
	env.Stack.Limits = map[string]cgroup.Limits{"loadgen": {MemoryBytes: 128 << 20, CPUCores: 0.2}}
	checked := labtest.LoadgenAlone(t, env)
	res := run(t, small(Condition{stack.RouteBufferingOff, "sync-2", 2}), env)
	if *checked == 0 {
		t.Fatal("no /fast request was measured")
	}
	r := res.Runs[0]
	if r.Status != recorder.RunOK || r.FastTotal != r.FastPlanned || !r.ClientReceiveS.Valid {
		t.Fatalf("run %s %s (%s): %d of %d /fast, receive %v; want ok, every request, the downloads", r.RunID, r.Status, r.Reason, r.FastTotal, r.FastPlanned, r.ClientReceiveS)
	}
	checkResultFiles(t, res.Dir, 1, r.FastPlanned)
	// Its readers at 0.2 CPU read in bursts: on a loaded machine every
	// sample was once beyond what the check resolves (0 of 105 judged).
	// What this test is about is where the load ran; conservation is
	// checked where it can be, and asserted by the other end-to-end tests.
	rows, err := recorder.ReadFile[recorder.Hop](filepath.Join(res.Dir, "hops.csv"))
	if err != nil {
		t.Fatal(err)
	}
	labtest.CheckConservedWhereJudged(t, res.Dir, rows)
}

// A load generator over its memory limit fails its run with that reason:
// the session, outside the limit, survives to say so and goes on, and
// every /fast request the load generator reported before the kill is a
// row of requests.csv.
func TestSlowLoadKilledForMemory(t *testing.T) {
	slowlabtest.Timing(t)
	env := testEnv(t, stack.NameEmbedded)
	slowlabtest.Require(t, env.Stack.Cgroups, "cgroups are not usable (root with a cgroup hierarchy)")
	swap := cgroup.SwapEnforcement(cgroup.DefaultRoot, "/proc")
	slowlabtest.Require(t, strings.HasPrefix(swap, "none allowed") || strings.HasSuffix(swap, "the host has no swap"),
		"swap: "+swap+": a process over its memory limit would swap instead of being killed")
	env.Stack.Limits = map[string]cgroup.Limits{"loadgen": {MemoryBytes: 5 << 20}}
	reported := 0
	env.OnRequest = func(string) { reported++ }
	c := small(Condition{stack.RouteBufferingOn, "gthread-4x8", 16})
	c.Fast.Rate = 400
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result).Runs[0]
	if r.Status != recorder.RunFailed || !strings.Contains(r.Reason, loadchild.ErrKilledForMemory.Error()) || !strings.Contains(r.Reason, "5 MiB") {
		t.Fatalf("run %s: %s %q, want failed with the load generator killed for memory at its 5 MiB limit", r.RunID, r.Status, r.Reason)
	}
	t.Logf("%s (%d requests reported before)", r.Reason, reported)
	reqs, rerr := recorder.ReadFile[recorder.Request](filepath.Join(env.Out, recorder.FileName[recorder.Request]()))
	if rerr != nil || len(reqs) != reported {
		t.Errorf("requests.csv: %d rows (%v), want the %d reported before the kill", len(reqs), rerr, reported)
	}
}

// The load generator's metrics, kept by the session from the child's
// lines, count every /fast request of requests.csv with its latency.
func TestSlowLoadMetricsMatchRows(t *testing.T) {
	slowlabtest.Timing(t)
	reg := prometheus.NewRegistry()
	env := testEnv(t, stack.NameEmbedded)
	env.Metrics = loadgen.NewMetrics(reg)
	res := run(t, small(Condition{stack.RouteDirect, "sync-2", 2}), env)
	reqs, err := recorder.ReadFile[recorder.Request](filepath.Join(res.Dir, recorder.FileName[recorder.Request]()))
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, r := range reqs {
		sum += r.LatencyMS / 1000
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "slowlab_loadgen_in_flight" {
			// Every request begun (its sent or connect line) ended.
			for _, m := range mf.GetMetric() {
				if v := m.GetGauge().GetValue(); v != 0 {
					t.Errorf("in flight after the run: %v %v", m.GetLabel(), v)
				}
			}
		}
		if mf.GetName() != "slowlab_loadgen_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			role := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "role" {
					role = l.GetValue()
				}
			}
			if role != loadgen.RoleFast {
				continue
			}
			found = true
			h := m.GetHistogram()
			if int(h.GetSampleCount()) != len(reqs) || math.Abs(h.GetSampleSum()-sum) > 0.001*float64(len(reqs)) {
				t.Errorf("fast histogram: %d requests, %.3f s in all; requests.csv %d, %.3f s", h.GetSampleCount(), h.GetSampleSum(), len(reqs), sum)
			}
		}
	}
	if !found {
		t.Error("no fast request duration histogram")
	}
}
