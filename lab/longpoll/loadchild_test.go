package longpoll

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
)

// The probes run in a load generator of their own, in the load
// generator's cgroup with its limit; the session, which samples and
// writes the rows, is not in that cgroup (it was, and the published
// 128 MiB limit SIGKILLed it with every row it had not written).
func TestProbesRunOutsideTheSession(t *testing.T) {
	env := testEnv(t, "embedded", false)
	slowlabtest.Require(t, env.Stack.Cgroups, "cgroups are not usable (root with a cgroup hierarchy)")
	env.Stack.Limits = map[string]cgroup.Limits{"loadgen": {MemoryBytes: 128 << 20}}
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	c := short(Condition{Server: "sync-2", Hold: 1, Probes: 4})
	c.Seconds, c.Lead = c.Seconds/2, c.Lead/2
	checked := 0
	env.OnRequest = func(runID string) {
		if checked > 0 {
			return
		}
		checked++
		name := stack.CgroupName(runID, "loadgen")
		pids, err := layout.Pids(name)
		switch {
		case err != nil:
			t.Errorf("the load generator's cgroup %s: %v", name, err)
		case slices.Contains(pids, os.Getpid()):
			t.Errorf("the session (pid %d) is in the load generator's cgroup %s (pids %v)", os.Getpid(), name, pids)
		case len(pids) != 1:
			t.Errorf("cgroup %s has pids %v, want the load generator alone", name, pids)
		}
	}
	start := time.Now()
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no probe was measured")
	}
	g := r.(*Result).Groups[0]
	if g.OK == 0 || g.Failed != 0 || g.ElapsedS < g.Seconds || g.ElapsedS > time.Since(start).Seconds() {
		t.Errorf("group %+v: want ok probes, none failed, elapsed from the window's start to the last probe's end", g)
	}
}
