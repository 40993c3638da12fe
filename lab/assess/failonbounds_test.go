package assess

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestFailOnBoundRange: a bound is 1 to MaxClients, both ends included,
// and no more than the clients the assessment tries.
func TestFailOnBoundRange(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, MaxClients: true, MaxClients + 1: false} {
		_, err := ParseFailOn(fmt.Sprintf("idle<%d", n))
		if (err == nil) != ok {
			t.Errorf("idle<%d: %v, want accepted %v", n, err, ok)
		}
	}
	probes := []Probe{ProbeIdle}
	if _, err := checkBounds("idle<16", probes, 16); err != nil {
		t.Errorf("idle<16 with max_clients 16: %v, want accepted", err)
	}
	if _, err := checkBounds("idle<17", probes, 16); err == nil || !strings.Contains(err.Error(), "over max_clients 16") {
		t.Errorf("idle<17 with max_clients 16: %v, want refused", err)
	}
}

// TestUnmadeProbes: a probe stopped invalid, not recovered, failed or
// late has no verdict (exit 3); one that degraded, held to the maximum,
// ran out of budget or found its clients short has one.
func TestUnmadeProbes(t *testing.T) {
	var r Result
	for _, stopped := range []string{
		"invalid: the level of 2 clients was invalid 3 times (last: x)",
		"not recovered: /fast did not come back within 30s after 2 clients",
		"failed: results not all written: disk full",
		"late: the probe's slot started 3s late",
		"degraded: 25 of 25 /fast requests failed",
		"not degraded with 64",
		"budget: 3s left, a level of 4 takes up to 9s",
		"short: 3 of 4 clients in place at the level of 4: the stack did not take them",
	} {
		r.Verdicts = append(r.Verdicts, Verdict{Probe: fmt.Sprint(len(r.Verdicts)), Stopped: stopped})
	}
	var got []string
	for _, u := range r.Unmade() {
		n, _, _ := strings.Cut(u, ":")
		got = append(got, n)
	}
	if want := []string{"0", "1", "2", "3"}; !slices.Equal(got, want) {
		t.Errorf("unmade %v (%q), want the verdicts %v", got, r.Unmade(), want)
	}
}
