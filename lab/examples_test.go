package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/idleconn"
	"github.com/slowlab/slowlab/lab/latencygap"
	"github.com/slowlab/slowlab/lab/longpoll"
	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/slowupload"
	"github.com/slowlab/slowlab/lab/sse"
	"github.com/slowlab/slowlab/lab/stalledreader"
	"github.com/slowlab/slowlab/lab/tempcliff"
	_ "github.com/slowlab/slowlab/lab/tempdisk"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// reduce shortens a scenario to a few seconds, keeping its stack and
// component settings.
func reduce(t *testing.T, cfg lab.Config) {
	switch c := cfg.(type) {
	case *slowclient.Config:
		// The first condition of each server, so that every server an
		// example names starts.
		var conds []slowclient.Condition
		for _, cond := range c.Conditions {
			if !slices.ContainsFunc(conds, func(o slowclient.Condition) bool { return o.Server == cond.Server }) {
				conds = append(conds, cond)
			}
		}
		c.Reps, c.Conditions = 1, conds
		c.Fast.Duration, c.Large.Size, c.SlowReader.ReadRate = lab.Duration(time.Second), 1<<20, 4<<20
	case *longpoll.Config:
		c.Reps, c.Conditions = 1, c.Conditions[:min(2, len(c.Conditions))]
		c.Seconds, c.Wait, c.Lead = lab.Duration(2*time.Second), lab.Duration(time.Second), lab.Duration(500*time.Millisecond)
	case *latencygap.Config:
		slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
		c.Runs, c.Delays, c.Sizes = 3, c.Delays[:min(2, len(c.Delays))], c.Sizes[:1]
	case *idleconn.Config:
		c.Reps, c.Modes, c.Conns = 1, c.Modes[:1], []int{2}
		c.RouteNames = c.RouteNames[:min(1, len(c.RouteNames))] // every server, on the first route
		c.Hold, c.Fast.Duration = lab.Duration(2*time.Second), lab.Duration(time.Second)
	case *slowupload.Config:
		c.Reps, c.Conditions = 1, c.Conditions[:min(2, len(c.Conditions))]
		c.Upload.Size, c.Upload.Rate, c.Fast.Duration = 1<<20, 1<<20, lab.Duration(time.Second)
	// The newer experiments run one condition: their shape tests cover
	// the grid on both stacks; here the example only has to run.
	case *stalledreader.Config:
		c.Reps, c.Conditions = 1, c.Conditions[:1]
		c.Size, c.Client.Rate, c.Client.Stall, c.Client.GiveUp = 1<<20, 1<<20, lab.Duration(time.Second), lab.Duration(15*time.Second)
		c.Fast.Duration = lab.Duration(time.Second)
	case *sse.Config:
		c.Reps, c.Conditions = 1, c.Conditions[:1]
		c.Stream.Duration, c.Fast.Duration = lab.Duration(time.Second), lab.Duration(time.Second)
	case *tempcliff.Config: // temp-cliff and temp-disk-full
		if slices.ContainsFunc(c.Conditions, func(cond tempcliff.Condition) bool { return cond.TempTmpfs != 0 }) {
			slowlabtest.RequireRoot(t, "temp-disk-full's mount namespace")
		}
		c.Reps, c.Conditions = 1, c.Conditions[:1] // temp-disk-full's first is its tmpfs
		for i := range c.Conditions {
			c.Conditions[i].Size = 2 << 20
		}
		c.SlowReader.ReadRate, c.Fast.Duration = 8<<20, lab.Duration(time.Second)
	default:
		t.Fatalf("no reduction for %T", cfg)
	}
}

// Every shipped example loads, validates and runs, reduced to a few
// seconds, on the stack it names (resolved as `slowlab run` does), and
// every run ends ok: an example cannot rot. Two run at once (each on its
// own ports, cgroups and results directory), which halves the suite's
// longest test.
func TestExamplesRun(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) < 4 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			cfg, err := lab.LoadScenario(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			reduce(t, cfg)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if s, ok := cfg.(lab.Stacked); ok && s.Stack().Stack != "embedded" {
				slowlabtest.RequireRoot(t, "the real stack's cgroup limits")
			}
			env, err := lab.Options{Out: t.TempDir()}.Env(cfg, labtest.LogWriter{T: t})
			if err != nil {
				t.Fatal(err)
			}
			res, err := cfg.Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if res.AllFailed() {
				t.Fatalf("every run failed: see %s", env.Out)
			}
		})
	}
}
