package lab_test

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
)

// TestEveryExperimentRefusesBadScenarios: the refusals every scenario
// shares, for every registered experiment, each naming what is wrong: an
// unknown field (by its name and line), reps out of range or not a
// number, and, where the experiment takes a stack, an unknown stack. The
// invalid-*.yml fixtures test each experiment's own fields.
func TestEveryExperimentRefusesBadScenarios(t *testing.T) {
	for _, e := range lab.Experiments() {
		cases := []struct{ body, want string }{
			{"bogus_field: 1\n", "-: line 2: field bogus_field not found in type "},
			{"reps: 0\n", "-: reps 0: allowed 1 to "},
			{"reps: x\n", "-: line 2: cannot unmarshal !!str `x` into int"},
		}
		if e.Takes("stack") {
			cases = append(cases, struct{ body, want string }{"stack: nowhere\n", `-: stack "nowhere": allowed auto, embedded, real`})
		}
		for _, c := range cases {
			_, err := lab.LoadScenario("-", strings.NewReader("experiment: "+e.Name+"\n"+c.body))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s with %q: %v, want an error starting %q", e.Name, c.body, err, c.want)
			}
		}
	}
}
