package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: out, Stack: lab.Embedded{}, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
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

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
