package longpoll

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// catcher is a testing.TB whose Errorf only collects: it runs a check of
// the end-to-end tests on made-up groups without failing the test.
type catcher struct {
	testing.TB
	errs []string
}

// Errorf keeps the message.
func (c *catcher) Errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// slotGroups are groups as TestLongPollShape measured them (sync-2
// holding 2: 50 probes of 20 clients, each client's first one stuck).
func slotGroups() map[string]lpRun {
	bounded := func(server string, hold, probes, slots, perWorker int) Group {
		return Group{Server: server, Hold: hold, ProbeConcurrency: probes, Slots: recorder.Some(float64(slots)),
			FreeSlots: recorder.Some(float64(slots - hold)), WorkerSlots: recorder.Some(float64(perWorker)), HeldSamples: 80,
			MaxWorkerHeld: recorder.Some(0), FullWorkerS: recorder.Some(0), FullSamples: recorder.Some(0), Seconds: 4, ElapsedS: 4}
	}
	base := bounded("sync-2", 0, 20, 2, 1)
	base.OK, base.ThroughputRPS, base.P95MS, base.MaxMS = 20128, 5030.8, recorder.Some(9.6), recorder.Some(90.4)
	held := bounded("sync-2", 2, 20, 2, 1)
	held.OK, held.ThroughputRPS, held.P95MS, held.MaxMS, held.ProbesOver1s = 50, 10, recorder.Some(3004.2), recorder.Some(3007.8), 30
	held.MaxWorkerHeld, held.FullWorkerS, held.FullSamples, held.ElapsedS = recorder.Some(1), recorder.Some(3.9), recorder.Some(78), 5
	got := map[string]lpRun{"sync-2/0/20": {Group: base}, "sync-2/2/20": {Group: held, StuckClients: 20}}
	for _, probes := range []int{8, 20} {
		g := bounded("gthread-2x16", 20, probes, 32, 16)
		g.OK, g.ThroughputRPS, g.P95MS, g.MaxMS, g.MaxWorkerHeld = 23136, 5782.7, recorder.Some(7.5), recorder.Some(43.4), recorder.Some(13)
		got[fmt.Sprintf("gthread-2x16/20/%d", probes)] = lpRun{Group: g}
	}
	return got
}

// TestCheckSlotRuleCountsClients: sync-2 holding 2 must have stuck every
// probe client, not made 20 probes slow: 5 clients stuck six times each
// (30 probes over 1 s, as many as the measured run had) fail the rule that
// counting probes passed. Its worker's fullness is counted in samples.
func TestCheckSlotRuleCountsClients(t *testing.T) {
	c := short()
	good := &catcher{TB: t}
	checkSlotRule(good, c, slotGroups())
	if len(good.errs) != 0 {
		t.Fatalf("the measured groups fail: %q", good.errs)
	}
	got := slotGroups()
	held := got["sync-2/2/20"]
	held.StuckClients = 5
	got["sync-2/2/20"] = held
	if held.ProbesOver1s < 20 {
		t.Fatalf("the mutation has %d probes over 1 s: the old rule (>= 20) would fail it too", held.ProbesOver1s)
	}
	bad := &catcher{TB: t}
	checkSlotRule(bad, c, got)
	if len(bad.errs) != 1 || !strings.Contains(bad.errs[0], "5 of the 20 probe clients") {
		t.Errorf("5 of 20 probe clients stuck: %q; want the one error naming them", bad.errs)
	}

	// sync-2's worker full in 8 of 80 samples (a sampler that saw every
	// eighth) fails; full in 78 of 80 passes at 1.9 s, a late sampler's.
	for _, tc := range []struct {
		full, fullS float64
		fail        bool
	}{{8, 0.4, true}, {78, 1.9, false}} {
		got := slotGroups()
		held := got["sync-2/2/20"]
		held.FullSamples, held.FullWorkerS = recorder.Some(tc.full), recorder.Some(tc.fullS)
		got["sync-2/2/20"] = held
		ct := &catcher{TB: t}
		checkSlotRule(ct, c, got)
		if failed := len(ct.errs) > 0; failed != tc.fail {
			t.Errorf("sync-2 full in %g of 80 samples (%g s): errors %q, want failure %t", tc.full, tc.fullS, ct.errs, tc.fail)
		}
	}
}

// TestCheckFullWorkerCountsSamples: holding 31 on 32 slots, a worker full
// in 70 of 80 samples passes however short a loaded machine's sampling
// made full_worker_s; one full in 2 of 80 fails, though it was full for
// more than 0 s (the rule it replaces).
func TestCheckFullWorkerCountsSamples(t *testing.T) {
	c := short()
	group := func(full float64, fullS float64) Group {
		return Group{Server: "gthread-2x16", Hold: 31, ProbeConcurrency: 8, MaxWorkerHeld: recorder.Some(16), HeldSamples: 80,
			FullSamples: recorder.Some(full), FullWorkerS: recorder.Some(fullS), MaxMS: recorder.Some(2985.6), ProbesOver1s: 5}
	}
	for _, tc := range []struct {
		name string
		g    Group
		fail bool
	}{
		{"full in 70 of 80 samples", group(70, 3.5), false},
		{"full in 70 of 80 samples, sampled late (1.4 s)", group(70, 1.4), false},
		{"full in 2 of 80 samples", group(2, 0.1), true},
		{"full in 39 of 80 samples", group(39, 1.9), true},
		{"full samples not counted", func() Group { g := group(70, 3.5); g.FullSamples = recorder.Maybe{}; return g }(), true},
	} {
		ct := &catcher{TB: t}
		checkFullWorker(ct, c, tc.g, false)
		if failed := len(ct.errs) > 0; failed != tc.fail {
			t.Errorf("%s: errors %q, want failure %t", tc.name, ct.errs, tc.fail)
		}
		if tc.fail && !(tc.g.FullWorkerS.Value > 0) {
			t.Errorf("%s: full_worker_s %v: the old rule (> 0 s) would fail it too", tc.name, tc.g.FullWorkerS)
		}
	}
}
