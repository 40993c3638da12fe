package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// realStack returns the Gunicorn + NGINX stack with the published limits,
// failing in CI when a real component is missing.
func realStack(t *testing.T) lab.GunicornNginx {
	t.Helper()
	requireTool(t, "gunicorn")
	requireTool(t, "nginx")
	requireRoot(t, "cgroup limits")
	t.Cleanup(func() { assertNothingLeft(t) })
	return lab.GunicornNginx{Limits: lab.DefaultLimits()}
}

// assertNothingLeft fails if a gunicorn or nginx process or a slowlab
// cgroup remains after a test.
func assertNothingLeft(t *testing.T) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		// Only ours: their command lines name the lab's work directories.
		if c := strings.TrimSpace(string(comm)); (c == "gunicorn" || c == "nginx" || strings.HasPrefix(c, "python")) && strings.Contains(string(cmdline), "slowlab-run-") {
			t.Errorf("process left behind: %s %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	for _, h := range []string{"cpu", "cpuacct", "memory", "unified", ""} {
		if _, err := os.Stat(filepath.Join(lab.DefaultCgroupRoot, h, "slowlab")); err == nil {
			sub, _ := os.ReadDir(filepath.Join(lab.DefaultCgroupRoot, h, "slowlab"))
			for _, s := range sub {
				if s.IsDir() {
					t.Errorf("cgroup left behind: %s", filepath.Join(h, "slowlab", s.Name()))
				}
			}
		}
	}
}

// TestRealStackShape runs a reduced matrix on real Gunicorn + NGINX under
// the published cgroup limits and asserts the published shape, the
// resource columns (the app throttled under its 0.25-core quota while
// serving, the proxy spooling to temp files) and that nothing is left.
func TestRealStackShape(t *testing.T) {
	st := realStack(t)
	e := lab.DefaultSlowClient()
	sync2 := lab.PublishedServer
	e.Conditions = []lab.Condition{
		{Route: lab.RouteDirect, Server: sync2, SlowClients: 0},
		{Route: lab.RouteDirect, Server: sync2, SlowClients: 2},
		{Route: lab.RouteBufferingOn, Server: sync2, SlowClients: 2},
		{Route: lab.RouteDirect, Server: lab.ServerSpec{Model: "gthread", Workers: 1, Threads: 4}, SlowClients: 2},
	}
	e.Reps, e.LargeSize, e.ReadRate = 1, 8<<20, 2<<20 // 4 s downloads
	e.FastRate, e.FastOffset, e.FastDuration = 10, 250*time.Millisecond, 4*time.Second
	out := t.TempDir()
	l := lab.DefaultLimits()["loadgen"]
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: out, Stack: st, Progress: testWriter{t}, LoadgenLimits: &l})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]recorder.Condition{}
	for _, c := range res.Conditions {
		got[c.Route+"/"+c.Server+"/"+itoa(c.SlowClients)] = c
	}
	if v := got["direct/sync-2/0"].P95MS.Value; v >= 50 {
		t.Errorf("direct sync-2 0 slow: p95 %.1f ms, want < 50", v)
	}
	if v := got["direct/sync-2/2"].P95MS.Value; v < 1000 {
		t.Errorf("direct sync-2 2 slow: p95 %.1f ms, want >= 1000", v)
	}
	if c := got["proxy-buffering-on/sync-2/2"]; c.P95MS.Value >= 100 || c.AppSendS.Value >= 0.5 || c.TempPeakMiB.Value < 5 {
		t.Errorf("buffering on 2 slow: p95 %.1f ms, app_send %.2f s, temp %.1f MiB; want < 100 ms, < 0.5 s, > 5 MiB", c.P95MS.Value, c.AppSendS.Value, c.TempPeakMiB.Value)
	}
	if v := got["direct/gthread-1x4/2"].P95MS.Value; v >= 100 {
		t.Errorf("gthread 1x4 2 slow: p95 %.1f ms, want < 100", v)
	}
	checkResultFiles(t, out, len(e.Conditions), 40)
	for _, r := range res.Runs {
		app, loadgen := r.Components[0], r.Components[2]
		if !app.CPUCores.Valid || !app.MemoryPeakBytes.Valid || !app.ThrottledMS.Valid || !loadgen.MemoryPeakBytes.Valid {
			t.Errorf("%s: component columns %+v", r.RunID, r.Components)
		}
		if app.CPUCores.Value > 0.3 {
			t.Errorf("%s: app used %.3f cores under a 0.25-core quota", r.RunID, app.CPUCores.Value)
		}
	}
	env, _ := os.ReadFile(filepath.Join(out, "environment.json"))
	for _, want := range []string{`"stack": "gunicorn-nginx"`, "app 0.25 CPU / 128 MiB", "gunicorn (version", "nginx version"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("environment.json lacks %q:\n%s", want, env)
		}
	}
}

// Under a request rate that needs more than a quarter core, the app is
// held to its 0.25-core quota, and the throttling is in runs.csv.
func TestRealStackThrottling(t *testing.T) {
	st := realStack(t)
	e := lab.DefaultSlowClient()
	e.Conditions = []lab.Condition{{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 0}}
	// 256 KiB responses at 1500/s want more than half a core (a response
	// costs Gunicorn about 0.4 ms here), twice the quota.
	e.FastPath = "/large?size=262144"
	e.Reps, e.FastRate, e.FastOffset, e.FastDuration = 1, 1500, 0, time.Second
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: t.TempDir(), Stack: st, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	app := res.Runs[0].Components[0]
	t.Logf("app: %.3f cores, throttled %.1f ms", app.CPUCores.Value, app.ThrottledMS.Value)
	if !(app.ThrottledMS.Value > 50) {
		t.Errorf("app throttled %v ms at 1500 responses/s of 256 KiB, want > 50", app.ThrottledMS)
	}
	if !(app.CPUCores.Value > 0.15 && app.CPUCores.Value <= 0.3) {
		t.Errorf("app used %.3f cores under a 0.25-core quota it saturates; want about 0.25", app.CPUCores.Value)
	}
}

// Killing Gunicorn mid-run marks that run failed with the reason, keeps its
// rows, and the next run proceeds on a fresh stack.
func TestRealStackGunicornKilled(t *testing.T) {
	st := realStack(t)
	e := lab.DefaultSlowClient()
	e.Conditions = []lab.Condition{
		{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 0},
		{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 1},
	}
	e.Reps, e.LargeSize, e.ReadRate = 1, 2<<20, 2<<20
	e.FastRate, e.FastOffset, e.FastDuration = 10, 0, 2*time.Second
	out := t.TempDir()
	first := true
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: out, Stack: st, Progress: testWriter{t},
		OnRunStart: func(_ string, pids map[string]int) {
			if first {
				first = false
				time.AfterFunc(time.Second, func() { syscall.Kill(pids["app"], syscall.SIGKILL) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	if r := res.Runs[0]; r.Status != recorder.RunFailed || !strings.Contains(r.Reason, "gunicorn") || r.FastTotal == 0 {
		t.Errorf("killed run: %s %q with %d requests; want failed naming gunicorn, rows kept", r.Status, r.Reason, r.FastTotal)
	}
	if r := res.Runs[1]; r.Status != recorder.RunOK || r.FastOK != 20 {
		t.Errorf("next run: %s %q, %d/%d ok", r.Status, r.Reason, r.FastOK, r.FastTotal)
	}
	reqs, _ := recorder.ReadFile[recorder.Request](filepath.Join(out, "requests.csv"))
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
