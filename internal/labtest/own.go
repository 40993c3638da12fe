package labtest

import (
	"context"
	"os"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// StartOwn starts a stack's app (and, on a proxied route, its proxy) for
// the test itself: a user's deployment that the external stack then only
// measures. On a stack with a real component it runs under the published
// limits in cgroups of its own (root needed). It is stopped, and its
// cgroups removed, when the test ends.
func StartOwn(t testing.TB, name string, route stack.Route, server string, large int64) *stack.Running {
	t.Helper()
	slowlabtest.EndToEnd(t, "it starts a stack")
	return StartOwnWith(t, name, route, server, large, nil)
}

// StartOwnWith is StartOwn with the stack's settings (its cgroup limits,
// the published ones on a real stack) and the deployment's other settings
// (the proxy's timeouts, say) set by with, when not nil.
func StartOwnWith(t testing.TB, name string, route stack.Route, server string, large int64, with func(*stack.Stack, *stack.Deployment)) *stack.Running {
	t.Helper()
	st, _, err := stack.Lookup(name)
	why := ""
	if err != nil {
		why = "stack " + name + ": " + err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
	if st.Real() {
		slowlabtest.RequireRoot(t, "the "+name+" stack's cgroup limits")
		st.Cgroups, st.Limits = true, lab.PublishedLimits()
	}
	srv, err := stack.ParseServer(server)
	if err != nil {
		t.Fatal(err)
	}
	work, err := lab.NewWorkDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	d := stack.Deployment{RunID: "own", Route: route, Server: srv, LargeSize: large, LogDir: t.TempDir(), WorkDir: work}
	if with != nil {
		with(&st, &d)
	}
	running, err := st.Start(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := running.Stop(); err != nil {
			t.Errorf("stop the test's own stack: %v", err)
		}
	})
	return running
}
