package lab

import (
	"io"
	"testing"
)

type plainResult struct{}

func (plainResult) Print(io.Writer) {}
func (plainResult) AllFailed() bool { return true }

type reasonedResult struct{ plainResult }

func (reasonedResult) ReasonsFile() string { return "probes.csv" }

// An experiment without runs.csv names its own file in "every run
// failed; the reasons are in ...".
func TestReasonsFile(t *testing.T) {
	if got := reasonsFile(plainResult{}); got != "runs.csv" {
		t.Errorf("default: %q, want runs.csv", got)
	}
	if got := reasonsFile(reasonedResult{}); got != "probes.csv" {
		t.Errorf("reasoned: %q, want probes.csv", got)
	}
}
