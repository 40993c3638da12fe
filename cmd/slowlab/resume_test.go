package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// tinySlowClient is a two-condition matrix of 1.5 s runs.
func tinySlowClient() lab.SlowClient {
	e := lab.DefaultSlowClient()
	e.Conditions = []lab.Condition{
		{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 0},
		{Route: lab.RouteBufferingOn, Server: lab.PublishedServer, SlowClients: 1},
	}
	e.Reps, e.FastRate, e.FastOffset, e.FastDuration = 1, 10, 0, 1500*time.Millisecond
	e.LargeSize, e.ReadRate = 1<<20, 1<<20
	return e
}

// An interrupted matrix resumed with Resume keeps the completed run, drops
// the partial one's rows and runs it again: every run id ends up with its
// requests exactly once.
func TestResumeAfterInterrupt(t *testing.T) {
	e := tinySlowClient()
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := lab.RunSlowClient(ctx, e, lab.Options{Out: out, Stack: lab.Embedded{}, Progress: testWriter{t},
		OnRunStart: func(id string, _ map[string]int) {
			if strings.HasPrefix(id, "proxy-buffering-on") {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
		}})
	if err == nil {
		t.Fatal("interrupted matrix returned no error")
	}
	runs, _ := recorder.ReadFile[recorder.Run](filepath.Join(out, "runs.csv"))
	if len(runs) != 2 || runs[1].Status != recorder.RunAborted {
		t.Fatalf("before resume: %+v", runs)
	}

	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: out, Stack: lab.Embedded{}, Progress: testWriter{t}, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || len(res.Conditions) != 2 {
		t.Fatalf("after resume: %d runs, %d conditions", len(res.Runs), len(res.Conditions))
	}
	checkResultFiles(t, out, 2, 15)
}

// A host busier than --max-host-cpu aborts the run with the reason and
// tries it again under a new run id.
func TestHostCPUGuardAbortsAndRetries(t *testing.T) {
	e := tinySlowClient()
	e.Conditions = e.Conditions[:1]
	e.FastDuration = 4 * time.Second
	out := t.TempDir()
	// 0.001 % is exceeded by any machine that is doing anything at all.
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: out, Stack: lab.Embedded{}, Progress: testWriter{t}, MaxHostCPU: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 {
		t.Fatalf("%d runs, want the first try and 2 retries", len(res.Runs))
	}
	for i, r := range res.Runs {
		if r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU") {
			t.Errorf("run %d %s: %s %q, want aborted for host CPU", i, r.RunID, r.Status, r.Reason)
		}
	}
	if res.Runs[2].RunID != "direct.sync-2.slow0.rep1.try3" || len(res.Conditions) != 0 {
		t.Errorf("last run %s, %d conditions; want .try3 and none (aborted runs are excluded)", res.Runs[2].RunID, len(res.Conditions))
	}
}
