package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/assess"
)

// TestAssessExitUnmade: a finished assessment without a --fail-on bound
// exits 3 when a probe's verdict could not be made (invalid at every
// try, /fast not back), naming it, and 0 when every probe has one.
func TestAssessExitUnmade(t *testing.T) {
	r := &assess.Result{Assessment: assess.Assessment{Verdicts: []assess.Verdict{
		{Probe: "idle", Stopped: "degraded: 25 of 25 /fast requests failed"},
		{Probe: "slowloris", Stopped: "invalid: the level of 2 clients was invalid 3 times (last: x)"},
	}}}
	var ee exitError
	if err := assessExit(r); !errors.As(err, &ee) || ee.code != assessUnmade || !strings.Contains(err.Error(), "1 probe(s) without a verdict: slowloris: invalid") {
		t.Errorf("one probe invalid: %v, want exit %d naming it", err, assessUnmade)
	}
	r.Verdicts = r.Verdicts[:1]
	if err := assessExit(r); err != nil {
		t.Errorf("every probe with a verdict: %v, want exit 0", err)
	}
}
