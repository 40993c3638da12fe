package experiments

import (
	"reflect"
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

// TestEveryResultPrintsSkipped: every experiment whose stack can leave
// conditions out (a Result on lab.MatrixResult) names them after its
// table, as the session's first lines did; websocket and h2-slow-client
// printed only the table (each experiment printed them itself), so an
// async or HTTP/3 condition the stack could not run was missing from the
// end of the output without a word.
func TestEveryResultPrintsSkipped(t *testing.T) {
	checked := 0
	for _, e := range lab.Experiments() {
		res := e.NewResult()
		skipped := reflect.ValueOf(res).Elem().FieldByName("Skipped") // lab.MatrixResult's
		if !skipped.IsValid() {
			continue
		}
		skipped.Set(reflect.ValueOf([]string{"direct async-1: the test stack has no event-loop server"}))
		var out strings.Builder
		lab.PrintResult(&out, res)
		if !strings.Contains(out.String(), "skipped: direct async-1: the test stack has no event-loop server\n") {
			t.Errorf("%s: its Print leaves out the skipped condition:\n%s", e.Name, out.String())
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no registered Result can be told what was skipped: the check reads nothing")
	}
}
