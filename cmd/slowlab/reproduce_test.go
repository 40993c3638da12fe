package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// TestSlowClientShapeReduced runs a reduced matrix on the embedded stack
// (real child processes, real sockets) and asserts the published shape:
// two slow readers starve sync-2 directly, not behind a buffering proxy and
// not with gthread 1x4.
func TestSlowClientShapeReduced(t *testing.T) {
	e := lab.DefaultSlowClient()
	sync2, gthread := lab.PublishedServer, lab.ServerSpec{Model: "gthread", Workers: 1, Threads: 4}
	e.Conditions = []lab.Condition{
		{Route: lab.RouteDirect, Server: sync2, SlowClients: 0},
		{Route: lab.RouteDirect, Server: sync2, SlowClients: 2},
		{Route: lab.RouteBufferingOff, Server: sync2, SlowClients: 2},
		{Route: lab.RouteBufferingOn, Server: sync2, SlowClients: 2},
		{Route: lab.RouteDirect, Server: gthread, SlowClients: 2},
	}
	e.Reps = 1
	e.LargeSize = 8 << 20
	e.ReadRate = 4 << 20 // 2 s downloads
	e.FastRate = 20
	e.FastOffset = 100 * time.Millisecond
	e.FastDuration = 2 * time.Second
	out := t.TempDir()
	// As root, every component is accounted in a cgroup of its own, as
	// `slowlab reproduce` does; the load generator is this test process.
	root := os.Geteuid() == 0
	o := lab.Options{Out: out, Stack: lab.Embedded{Cgroups: root}, Progress: testWriter{t}}
	if root {
		o.LoadgenLimits = &lab.Limits{}
	}
	res, err := lab.RunSlowClient(context.Background(), e, o)
	if err != nil {
		t.Fatal(err)
	}
	if root {
		assertNothingLeft(t)
		for _, r := range res.Runs {
			for i, c := range r.Components {
				if c.MemoryPeakBytes.Valid != (i != 1 || r.Route != "direct") {
					t.Errorf("%s %s: memory peak %v: want a cgroup value for every component that exists", r.RunID, recorder.Components[i], c.MemoryPeakBytes)
				}
			}
		}
	} else if os.Getenv("CI") == "true" {
		t.Error("CI=true but not root: the cgroup accounting of the embedded stack is not tested")
	}
	byCond := map[string]recorder.Condition{}
	for _, c := range res.Conditions {
		byCond[c.Route+"/"+c.Server+"/"+string(rune('0'+c.SlowClients))] = c
	}
	p95 := func(key string) float64 {
		c, ok := byCond[key]
		if !ok || !c.P95MS.Valid {
			t.Fatalf("no p95 for %s in %+v", key, res.Conditions)
		}
		return c.P95MS.Value
	}
	if v := p95("direct/sync-2/0"); v >= 50 {
		t.Errorf("direct sync-2 0 slow: p95 %.1f ms, want < 50", v)
	}
	if v := p95("direct/sync-2/2"); v < 500 {
		t.Errorf("direct sync-2 2 slow: p95 %.1f ms, want >= 500 (workers stuck writing)", v)
	}
	if v := p95("proxy-buffering-on/sync-2/2"); v >= 100 {
		t.Errorf("buffering on 2 slow: p95 %.1f ms, want < 100", v)
	}
	if v := p95("direct/gthread-1x4/2"); v >= 100 {
		t.Errorf("gthread-1x4 2 slow: p95 %.1f ms, want < 100", v)
	}
	if on, direct := byCond["proxy-buffering-on/sync-2/2"], byCond["direct/sync-2/2"]; !(on.AppSendS.Value < direct.AppSendS.Value/4) {
		t.Errorf("app_send_s buffering on %.3f s vs direct %.3f s: the proxy should release the app early", on.AppSendS.Value, direct.AppSendS.Value)
	}
	checkResultFiles(t, out, len(e.Conditions), 40)
	if on := byCond["proxy-buffering-on/sync-2/2"].TempPeakMiB; !on.Valid || on.Value < 5 {
		t.Errorf("buffering on: temp_peak_mib %v, want > 5 (two 8 MiB responses spooled)", on)
	}
	if off := byCond["proxy-buffering-off/sync-2/2"].TempPeakMiB; !off.Valid || off.Value > 0.1 {
		t.Errorf("buffering off: temp_peak_mib %v, want about 0", off)
	}
	checkResources(t, out, res.Runs)
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(out, "large-responses.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(larges) != 8 {
		t.Errorf("%d large-response rows, want 8", len(larges))
	}
	for _, l := range larges {
		if !l.Complete || l.Bytes != e.LargeSize || l.Status != 200 || !l.AppSendS.Valid || l.ReceiveS < 2 {
			t.Errorf("download %+v: want complete %d bytes, app_send_s, receive >= 2 s", l, e.LargeSize)
		}
	}
}

// checkResultFiles checks the results directory against the CSV contract:
// every file parses with the exact header, every run is ok and has exactly
// perRun request rows.
func checkResultFiles(t *testing.T, dir string, runs, perRun int) {
	t.Helper()
	for _, name := range []string{"requests.csv", "large-responses.csv", "resource-samples.csv", "runs.csv", "conditions.csv", "environment.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	reqs, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]int{}
	for _, r := range reqs {
		rows[r.RunID] = append(rows[r.RunID], r.Seq)
		if r.Status != 200 || r.Error != "" || r.Bytes != 12 {
			t.Errorf("request %s#%d: status %d bytes %d error %q", r.RunID, r.Seq, r.Status, r.Bytes, r.Error)
		}
	}
	rr, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rr) != runs {
		t.Errorf("%d runs, want %d", len(rr), runs)
	}
	for _, r := range rr {
		if r.Status != recorder.RunOK || r.FastTotal != perRun || r.FastOK != perRun {
			t.Errorf("run %s: status %s %q, fast %d/%d", r.RunID, r.Status, r.Reason, r.FastOK, r.FastTotal)
		}
		seqs := rows[r.RunID]
		slices.Sort(seqs)
		if len(seqs) != perRun || seqs[0] != 0 || seqs[len(seqs)-1] != perRun-1 || len(slices.Compact(seqs)) != perRun {
			t.Errorf("run %s: request seqs %v, want 0..%d once each", r.RunID, seqs, perRun-1)
		}
	}
	if _, err := recorder.ReadFile[recorder.Condition](filepath.Join(dir, "conditions.csv")); err != nil {
		t.Error(err)
	}
}

// checkResources checks resource-samples.csv: about 5 rows per second per
// component with no error in a healthy run, and the run's component
// columns filled where the component exists.
func checkResources(t *testing.T, dir string, runs []recorder.Run) {
	t.Helper()
	samples, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(dir, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ run, comp string }
	rows, bad := map[key]int{}, map[key]int{}
	for _, s := range samples {
		rows[key{s.RunID, s.Component}]++
		if s.Error != "" {
			bad[key{s.RunID, s.Component}]++
		}
	}
	for _, r := range runs {
		comps := []string{"app", "loadgen"}
		if r.Route != "direct" {
			comps = append(comps, "proxy")
		}
		for _, c := range comps {
			k := key{r.RunID, c}
			// Runs last 2.1 s or more: at 200 ms that is 10 or more ticks.
			if rows[k] < 10 || bad[k] > 1 {
				t.Errorf("%s %s: %d sample rows, %d with errors", r.RunID, c, rows[k], bad[k])
			}
			i := slices.Index(recorder.Components[:], c)
			cs := r.Components[i]
			if !cs.CPUCores.Valid || !cs.RSSPeakBytes.Valid || cs.RSSPeakBytes.Value < 1<<20 {
				t.Errorf("%s %s: component summary %+v", r.RunID, c, cs)
			}
		}
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestExporterKilledMidRun kills the run's exporter: the gap shows as error
// rows with no values, sampling resumes when the lab has restarted it, and
// the run still completes.
func TestExporterKilledMidRun(t *testing.T) {
	e := lab.DefaultSlowClient()
	e.Conditions = []lab.Condition{{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 0}}
	e.Reps, e.FastRate, e.FastOffset, e.FastDuration = 1, 10, 0, 3*time.Second
	out := t.TempDir()
	killed := make(chan int, 1)
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: out, Stack: lab.Embedded{}, Progress: testWriter{t},
		OnRunStart: func(_ string, pids map[string]int) {
			time.AfterFunc(time.Second, func() {
				syscall.Kill(pids["exporter"], syscall.SIGKILL)
				killed <- pids["exporter"]
			})
		}})
	if err != nil {
		t.Fatal(err)
	}
	<-killed
	if r := res.Runs[0]; r.Status != recorder.RunOK || r.FastOK != 30 {
		t.Fatalf("run %+v: want ok with 30 requests", r)
	}
	samples, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(out, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var seq []bool // per app row: error?
	for _, s := range samples {
		if s.Component != "app" {
			continue
		}
		failed := s.Error != ""
		if failed && (s.CPUSeconds.Valid || s.RSSBytes.Valid || s.Processes.Valid) {
			t.Errorf("error row carries values: %+v", s)
		}
		seq = append(seq, failed)
	}
	first := slices.Index(seq, true)
	if first < 1 {
		t.Fatalf("app rows (true = error) %v: want good rows, then a gap", seq)
	}
	if resumed := slices.Index(seq[first:], false); resumed < 0 {
		t.Errorf("app rows %v: sampling never resumed after the exporter was restarted", seq)
	}
}
