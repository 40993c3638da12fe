package experiments

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestPublishedConditionsOnEveryStack: every experiment's published
// conditions, and its --quick grid, resolve on the embedded and the real
// stack before anything starts, and --stack auto picks the real one where
// it is installed. A condition's server "async" is the stack's own
// event-loop server, resolved run by run, not a model the stack must be
// able to name: checked as one, `reproduce sse --stack real` (and
// slow-upload, stalled-reader, websocket) was refused, "server model
// "async": the real stack runs ...", and auto chose the embedded stack.
func TestPublishedConditionsOnEveryStack(t *testing.T) {
	_, _, err := stack.Lookup(stack.NameReal)
	why := ""
	if err != nil {
		why = err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
	for _, e := range lab.Experiments() {
		if !e.Shared.Has(lab.SharedStack) {
			continue
		}
		for _, quick := range []bool{false, true} {
			for _, name := range []string{stack.NameEmbedded, stack.NameReal, stack.NameAuto} {
				cfg := e.New()
				o := lab.Options{Stack: name, Quick: quick, NoLimits: true, Out: t.TempDir()}
				if err := o.Apply(cfg, lab.Given{}); err != nil {
					t.Fatalf("%s --quick=%v --stack %s: %v", e.Name, quick, name, err)
				}
				var stderr strings.Builder
				env, err := o.Env(cfg, &stderr)
				if err != nil {
					t.Errorf("%s --quick=%v --stack %s: refused: %v", e.Name, quick, name, err)
					continue
				}
				if want := map[string]string{stack.NameAuto: stack.NameReal}[name]; want != "" && env.Stack.Name != want {
					t.Errorf("%s --quick=%v --stack auto: chose %s, want %s (%s)", e.Name, quick, env.Stack.Name, want, strings.TrimSpace(stderr.String()))
				}
			}
		}
	}
}
