package slowclient

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// tiny is a two-condition matrix of 1.5 s runs.
func tiny() *Config {
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "sync-2", 0}, {stack.RouteBufferingOn, "sync-2", 1}}
	c.Reps, c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 1, 10, 0, lab.Duration(1500*time.Millisecond)
	c.Large.Size, c.SlowReader.ReadRate = 1<<20, 1<<20
	return c
}

// An interrupted matrix resumed keeps the completed run, drops the partial
// one's rows and runs it again: every run id ends up with its requests
// exactly once, and environment.json keeps both sessions.
func TestResumeAfterInterrupt(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	env := testEnv(t, stack.NameEmbedded)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted after 3 requests of the second run were measured.
	seen := 0
	env.OnRequest = func(id string) {
		if strings.HasPrefix(id, "proxy-buffering-on") {
			if seen++; seen == 3 {
				cancel()
			}
		}
	}
	if _, err := c.Run(ctx, env); err == nil {
		t.Fatal("interrupted matrix returned no error")
	}
	runs, _ := recorder.ReadFile[recorder.Run](filepath.Join(env.Out, "runs.csv"))
	if len(runs) != 2 || runs[1].Status != recorder.RunAborted {
		t.Fatalf("before resume: %+v", runs)
	}
	// The interrupted run accounts for every scheduled request.
	if r := runs[1]; r.FastTotal != 15 || r.FastPlanned != 15 || r.FastSent >= 15 || r.FastSent < 3 {
		t.Errorf("interrupted run: %d rows, %d planned, %d sent; want 15 rows and 15 planned, some not sent", r.FastTotal, r.FastPlanned, r.FastSent)
	}

	env.OnRequest, env.Resume = nil, true
	res := run(t, c, env)
	if len(res.Runs) != 2 || len(res.Conditions) != 2 {
		t.Fatalf("after resume: %d runs, %d conditions", len(res.Runs), len(res.Conditions))
	}
	checkResultFiles(t, env.Out, 2, 15)
	sessions, err := recorder.ReadEnvironment(env.Out)
	if err != nil || len(sessions) != 2 {
		t.Errorf("environment.json: %d sessions (%v), want both", len(sessions), err)
	}
}

// A results directory is resumed only with the settings it was run with;
// the error names every field that differs.
func TestResumeRefusesOtherSettings(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	c.Conditions = c.Conditions[:1]
	env := testEnv(t, stack.NameEmbedded)
	run(t, c, env)
	other := tiny()
	other.Conditions = other.Conditions[:1]
	other.Fast.Rate, other.Large.Size = 20, 2<<20
	env.Resume, env.Scenario = true, nil
	_, err := other.Run(context.Background(), env)
	want := "it was run with other settings: fast.rate: 10 -> 20; large.size: 1m -> 2m"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("resume with other settings: %v, want ... %q", err, want)
	}
	// Nothing was changed: the one run is still there, once.
	checkResultFiles(t, env.Out, 1, 15)
}

// A host busier than --max-host-cpu aborts the run with the reason and
// tries it again under a new run id.
func TestHostCPUGuardAbortsAndRetries(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	c.Conditions = c.Conditions[:1]
	c.Fast.Duration = lab.Duration(4 * time.Second)
	env := testEnv(t, stack.NameEmbedded)
	env.MaxHostCPU = 0.001
	labtest.BusyHost(t) // the busy host is the test's own doing
	res := run(t, c, env)
	if len(res.Runs) != 3 {
		t.Fatalf("%d runs, want the first try and 2 retries", len(res.Runs))
	}
	for i, r := range res.Runs {
		if r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU") {
			t.Errorf("run %d %s: %s %q, want aborted for host CPU", i, r.RunID, r.Status, r.Reason)
		}
	}
	if res.Runs[2].RunID != "direct.sync-2.slow0.rep1.try3" || len(res.Conditions) != 1 || res.Conditions[0].Runs != 0 || res.Conditions[0].RunsExcluded != 3 {
		t.Errorf("last run %s, conditions %+v; want .try3 and the condition with 0 runs, 3 excluded", res.Runs[2].RunID, res.Conditions)
	}
	if !res.AllFailed() {
		t.Error("AllFailed is false with every run aborted")
	}
}
