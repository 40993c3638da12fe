package main

import (
	"strings"
	"testing"
)

// TestAssessHelpSaysTheLagBound: --max-schedule-lag's shared help says
// "0 disables" (the experiments'), but assess keeps 250 ms at 0 (its
// levels and baselines are never judged without the bound): its help
// says so.
func TestAssessHelpSaysTheLagBound(t *testing.T) {
	code, stdout, stderr := runCmd(t, "assess", "--help")
	if code != 0 || !strings.Contains(stdout, "--max-schedule-lag, for assess:") || !strings.Contains(stdout, "0, the default, is assess's 250ms, not off") {
		t.Errorf("assess --help: exit %d, stderr %q; stdout lacks what --max-schedule-lag 0 does for assess:\n%s", code, stderr, stdout)
	}
}
