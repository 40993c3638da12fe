package slowclient

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestRealStackShape runs a reduced matrix on real Gunicorn + NGINX under
// the published cgroup limits and asserts the published shape, the
// resource columns (the app held to its 0.25-core quota, the proxy
// spooling to temp files) and that nothing is left.
func TestRealStackShape(t *testing.T) {
	slowlabtest.Timing(t)
	c := small(
		Condition{stack.RouteDirect, "sync-2", 0},
		Condition{stack.RouteDirect, "sync-2", 2},
		Condition{stack.RouteBufferingOn, "sync-2", 2},
		Condition{stack.RouteDirect, "gthread-1x4", 2},
	)
	c.SlowReader.ReadRate = 2 << 20 // 4 s downloads
	c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 10, lab.Duration(250*time.Millisecond), lab.Duration(4*time.Second)
	env := testEnv(t, stack.NameReal)
	res := run(t, c, env)
	got := conditions(res)
	// Unstarved: the median (see p50); starved: the p95.
	if v := p50(t, got, "direct/sync-2/0"); v >= 50 {
		t.Errorf("direct sync-2 0 slow: p50 %.1f ms, want < 50", v)
	}
	if v := p95(t, got, "direct/sync-2/2"); v < 1000 {
		t.Errorf("direct sync-2 2 slow: p95 %.1f ms, want >= 1000", v)
	}
	if c := got["proxy-buffering-on/sync-2/2"]; c.P50MS.Value >= 100 || c.AppSendS.Value >= 0.5 || c.TempPeakMiB.Value < 5 {
		t.Errorf("buffering on 2 slow: p50 %.1f ms, app_send %.2f s, temp %.1f MiB; want < 100 ms, < 0.5 s, > 5 MiB", c.P50MS.Value, c.AppSendS.Value, c.TempPeakMiB.Value)
	}
	if v := p50(t, got, "direct/gthread-1x4/2"); v >= 100 {
		t.Errorf("gthread 1x4 2 slow: p50 %.1f ms, want < 100", v)
	}
	checkResultFiles(t, env.Out, len(c.Conditions), 40)
	checkHops(t, env.Out, res.Runs, recorder.HopSourceDerived)
	for _, r := range res.Runs {
		app, loadgen := r.Components[0], r.Components[2]
		if !app.CPUCores.Valid || !app.MemoryPeakBytes.Valid || !app.ThrottledMS.Valid || !loadgen.MemoryPeakBytes.Valid {
			t.Errorf("%s: component columns %+v", r.RunID, r.Components)
		}
		if app.CPUCores.Value > 0.3 {
			t.Errorf("%s: app used %.3f cores under a 0.25-core quota", r.RunID, app.CPUCores.Value)
		}
	}
	env2, _ := os.ReadFile(filepath.Join(env.Out, "environment.json"))
	for _, want := range []string{`"stack": "real"`, "app 0.25 CPU / 128 MiB", "loadgen 0.2 CPU / 128 MiB", "gunicorn (version", "nginx version", `"swap": "`} {
		if !strings.Contains(string(env2), want) {
			t.Errorf("environment.json lacks %q:\n%s", want, env2)
		}
	}
}

// Under a request rate that needs more than a quarter core, the app is
// held to its 0.25-core quota, and the throttling is in runs.csv.
func TestRealStackThrottling(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "sync-2", 0}}
	// 256 KiB responses at 1500/s want more than half a core (a response
	// costs Gunicorn about 0.4 ms here), twice the quota.
	c.Fast.Path = "/large?size=262144"
	c.Reps, c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 1, 1500, 0, lab.Duration(time.Second)
	res := run(t, c, testEnv(t, stack.NameReal))
	app := res.Runs[0].Components[0]
	t.Logf("app: %.3f cores, throttled %.1f ms", app.CPUCores.Value, app.ThrottledMS.Value)
	if !(app.ThrottledMS.Value > 50) {
		t.Errorf("app throttled %v ms at 1500 responses/s of 256 KiB, want > 50", app.ThrottledMS)
	}
	// The quota holds it from above whatever the load; other load can
	// only give it less.
	if !(app.CPUCores.Value > 0.02 && app.CPUCores.Value <= 0.3) {
		t.Errorf("app used %.3f cores under a 0.25-core quota it saturates; want at most about 0.25", app.CPUCores.Value)
	}
}

// Killing Gunicorn mid-run marks that run failed with the reason, keeps its
// rows, and the next run proceeds on a fresh stack.
func TestRealStackGunicornKilled(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "sync-2", 0}, {stack.RouteDirect, "sync-2", 1}}
	c.Reps, c.Large.Size, c.SlowReader.ReadRate = 1, 2<<20, 2<<20
	c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 10, 0, lab.Duration(2*time.Second)
	env := testEnv(t, stack.NameReal)
	var appPID, measured int
	first := ""
	env.OnRunStart = func(id string, pids map[string]int) {
		if first == "" {
			first, appPID = id, pids["app"]
		}
	}
	// Killed after the first run's 5th request: mid-run however slow.
	env.OnRequest = func(id string) {
		if id == first {
			if measured++; measured == 5 {
				syscall.Kill(appPID, syscall.SIGKILL)
			}
		}
	}
	res := run(t, c, env)
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	if r := res.Runs[0]; r.Status != recorder.RunFailed || !strings.Contains(r.Reason, "gunicorn") || r.FastTotal == 0 {
		t.Errorf("killed run: %s %q with %d requests; want failed naming gunicorn, rows kept", r.Status, r.Reason, r.FastTotal)
	}
	if r := res.Runs[1]; r.Status != recorder.RunOK || r.FastOK != 20 {
		t.Errorf("next run: %s %q, %d/%d ok", r.Status, r.Reason, r.FastOK, r.FastTotal)
	}
	reqs, _ := recorder.ReadFile[recorder.Request](filepath.Join(env.Out, "requests.csv"))
	n := 0
	for _, r := range reqs {
		if r.RunID == res.Runs[0].RunID {
			n++
		}
	}
	if n != res.Runs[0].FastTotal {
		t.Errorf("killed run: %d request rows, runs.csv says %d", n, res.Runs[0].FastTotal)
	}
}

// TestRealStackOOMKill: Node.js writing four 16 MiB bodies without
// waiting for its slow readers outgrows a 64 MiB app limit; the kernel
// kills the worker, and the run says so: failed, the OOM kill first in
// its reason, app_oom_kills in runs.csv. The runs of the same condition
// with backpressure on stay ok and count no kill.
func TestRealStackOOMKill(t *testing.T) {
	slowlabtest.Timing(t)
	c := small(Condition{stack.RouteDirect, "node-2", 4})
	c.Large.Size, c.SlowReader.ReadRate = 16<<20, 4<<20 // the bodies wait in the worker: 4 s each
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(2*time.Second)
	// A connection the Node.js primary handed to a worker killed before
	// it took it stays open in the primary, never answered (Node.js's
	// cluster; lab/stack TestNodeKilledWorkersConnectionHeld): a /fast
	// request or a download on it ends only at its timeout, 30 s and
	// 2 min by default. Bounded here, well above what a /fast request
	// (milliseconds) and a download (4 s) take.
	c.Fast.Timeout = lab.Duration(5 * time.Second)
	c.SlowReader.Timeout = lab.Duration(15 * time.Second)
	for _, bp := range []string{"off", "on"} {
		t.Run("backpressure-"+bp, func(t *testing.T) {
			c.Large.Backpressure = bp
			env := testEnv(t, stack.NameReal)
			app := env.Stack.Limits["app"]
			app.MemoryBytes = 64 << 20
			env.Stack.Limits = maps.Clone(env.Stack.Limits)
			env.Stack.Limits["app"] = app
			run(t, c, env)
			runs, err := recorder.ReadFile[recorder.Run](filepath.Join(env.Out, "runs.csv"))
			// A try the host guard aborted (other work on the machine) is
			// tried again: its row stays, aborted.
			runs = slices.DeleteFunc(runs, func(r recorder.Run) bool { return r.Status == recorder.RunAborted })
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs.csv: %d rows not aborted, %v", len(runs), err)
			}
			r := runs[0]
			kills := r.Components[0].OOMKills
			t.Logf("backpressure %s: %s %q, app memory peak %.1f MiB, OOM kills %v", bp, r.Status, r.Reason, r.Components[0].MemoryPeakBytes.Value/(1<<20), kills)
			if bp == "off" && (r.Status != recorder.RunFailed || !strings.HasPrefix(r.Reason, "app: ") ||
				!strings.Contains(r.Reason, "killed for memory (OOM") || !kills.Valid || kills.Value < 1) {
				t.Errorf("backpressure off: run %s %q, app_oom_kills %v; want failed for the OOM kill", r.Status, r.Reason, kills)
			}
			if bp == "on" && (r.Status != recorder.RunOK || kills != recorder.Some(0)) {
				t.Errorf("backpressure on: run %s %q, app_oom_kills %v; want ok with 0", r.Status, r.Reason, kills)
			}
			checkNothingLost(t, env.Out, r)
		})
	}
}

// checkNothingLost asserts that run r kept a row for each of its downloads
// and each of its scheduled /fast requests, however they ended.
func checkNothingLost(t *testing.T, dir string, r recorder.Run) {
	t.Helper()
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, "large-responses.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, clients := 0, map[int]bool{}
	for _, l := range larges {
		if l.RunID == r.RunID {
			rows++
			clients[l.Client] = true
			t.Logf("download %d: %s, %d bytes in %.1f s %s", l.Client, l.Outcome, l.Bytes, l.ReceiveS, l.Error)
		}
	}
	if rows != r.SlowClients || len(clients) != r.SlowClients {
		t.Errorf("%d download rows of clients %v, want one of each of %d", rows, clients, r.SlowClients)
	}
	reqs, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range reqs {
		if q.RunID == r.RunID {
			n++
		}
	}
	if n != r.FastPlanned || r.FastTotal != r.FastPlanned {
		t.Errorf("%d request rows, runs.csv fast_total %d; want the %d planned", n, r.FastTotal, r.FastPlanned)
	}
}
