// Package labtest builds the environments the experiments' end-to-end
// tests run in, as `slowlab reproduce` sets them up.
package labtest

import (
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// LogWriter sends progress lines to the test log.
type LogWriter struct{ T testing.TB }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Env returns an environment on the named stack as `slowlab reproduce`
// sets it up: the published limits in cgroups on a stack with a real
// component (root needed; CI=true fails without it), accounting cgroups
// on the embedded one when root; results in a temporary directory. When
// the test ends, none of the processes or cgroups it started may be left
// (slowlabtest.NothingLeft).
func Env(t testing.TB, stackName string) *lab.Env {
	t.Helper()
	slowlabtest.NothingLeft(t)
	st, _, err := stack.Lookup(stackName)
	why := ""
	if err != nil {
		why = err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
	if st.Real() {
		slowlabtest.RequireRoot(t, "the "+stackName+" stack's cgroup limits")
		st.Cgroups, st.Limits = true, lab.PublishedLimits()
	} else {
		st.Cgroups = stack.CgroupsUsable("")
	}
	// A run whose load generator fell a second behind measured a stalled
	// test machine, not the stack: tried again, as a user's would be
	// with --max-schedule-lag 1s.
	return &lab.Env{Out: t.TempDir(), Stack: st, Progress: LogWriter{t}, MaxScheduleLag: time.Second}
}
