package lab_test

import (
	"context"
	"flag"
	"fmt"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// TestRepsRefusedByEveryExperiment: reps: 0 and 1001 are refused for
// every registered experiment that repeats, with one error: 1 to
// lab.MaxReps, or to the experiment's own lower lab.RepsLimit.
func TestRepsRefusedByEveryExperiment(t *testing.T) {
	n := 0
	for _, e := range lab.Experiments() {
		cfg := e.New()
		if _, ok := cfg.(lab.Repeated); !ok {
			continue
		}
		n++
		limit := lab.MaxReps
		if l, ok := cfg.(lab.RepsLimit); ok {
			limit = l.MaxReps()
		}
		for _, reps := range []int{0, -1, limit + 1, lab.MaxReps + 1} {
			want := fmt.Sprintf("reps %d: allowed 1 to %d", reps, limit)
			if _, err := lab.ParseScenario(fmt.Appendf(nil, "experiment: %s\nreps: %d\n", e.Name, reps)); err == nil || err.Error() != want {
				t.Errorf("%s, reps %d: error %v, want %s", e.Name, reps, err, want)
			}
		}
		if _, err := lab.ParseScenario(fmt.Appendf(nil, "experiment: %s\nreps: %d\n", e.Name, limit)); err != nil {
			t.Errorf("%s, reps %d: %v", e.Name, limit, err)
		}
	}
	if n < 10 {
		t.Errorf("%d experiments repeat, want all 10", n)
	}
}

// repeatOnly is an experiment's config with reps and no check of its own.
type repeatOnly struct {
	lab.Header `yaml:",inline"`
	Reps       int `yaml:"reps"`
}

func (c *repeatOnly) Head() *lab.Header                                 { return &c.Header }
func (c *repeatOnly) Flags(*flag.FlagSet)                               {}
func (c *repeatOnly) Validate() error                                   { return nil }
func (c *repeatOnly) Run(context.Context, *lab.Env) (lab.Result, error) { return nil, nil }
func (c *repeatOnly) Repetitions() *int                                 { return &c.Reps }

// TestRepsCheckedByLab: the reps rule is lab's, so an experiment that
// does not check reps itself gets it.
func TestRepsCheckedByLab(t *testing.T) {
	for reps, want := range map[int]string{0: "reps 0: allowed 1 to 1000", 1001: "reps 1001: allowed 1 to 1000", 1: "", 1000: ""} {
		err := lab.ValidateAll(&repeatOnly{Reps: reps})
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("reps %d: %v, want %q", reps, err, want)
		}
	}
}
