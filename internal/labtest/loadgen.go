package labtest

import (
	"os"
	"slices"
	"testing"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// LoadgenAlone sets env.OnRequest to check, at the first request a run
// measures, that the run's load generator cgroup holds one process, the
// load generator child, and not this one (the session); it returns how
// many requests were checked (0 or 1), to be read after the run.
func LoadgenAlone(t testing.TB, env *lab.Env) *int {
	t.Helper()
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	checked := new(int)
	env.OnRequest = func(runID string) {
		if *checked > 0 {
			return
		}
		*checked++
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
	return checked
}
