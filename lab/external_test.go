package lab_test

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
)

// TestExternalRefusalIsRegistered: an experiment that cannot run on
// stack: external says so in its registration, and ValidateAll refuses
// its published configuration on that stack with "stack external: NAME"
// and the registered reason, before anything asks for the external:
// block; one that can run there asks for the block instead. One that
// cannot map its requests to an external stack (no Targeting) must
// register a refusal: with sse's taken away, this test fails.
func TestExternalRefusalIsRegistered(t *testing.T) {
	refusing := 0
	for _, e := range lab.Experiments() {
		cfg := e.New()
		s, ok := cfg.(lab.Stacked)
		if !ok {
			continue
		}
		s.Stack().Stack = "external"
		err := lab.ValidateAll(cfg)
		_, targets := cfg.(lab.Targeting)
		switch {
		case e.External == "" && !targets:
			t.Errorf("%s cannot map its requests to an external stack (no Targeting) and registers no refusal of it", e.Name)
		case e.External != "":
			refusing++
			if want := "stack external: " + e.Name + " " + e.External; err == nil || err.Error() != want {
				t.Errorf("%s on stack external: %v, want %q", e.Name, err, want)
			}
		case err == nil || !strings.Contains(err.Error(), "no external: block"):
			t.Errorf("%s on stack external: %v, want it to ask for the external: block", e.Name, err)
		}
	}
	if refusing < 8 {
		t.Errorf("%d experiments refuse stack: external, want the 8 that start their own stack at least", refusing)
	}
}
