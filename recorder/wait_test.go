package recorder

import (
	"context"
	"testing"
	"time"
)

// testContext is done shortly before the test binary's -timeout, so a wait
// for an event that does not come fails with its own message (and the
// test's cleanups, which stop Prometheus, still run) instead of the
// binary's panic. Waits are bounded by that, not by a guess at how long a
// loaded machine may take.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		margin := min(15*time.Second, time.Until(d)/10)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-margin))
		t.Cleanup(cancel)
	}
	return ctx
}

// waitFor polls until check reports done, every 50 ms, and fails the test
// with what and check's last state if testContext ends first.
func waitFor(t *testing.T, what string, check func() (done bool, state string)) {
	t.Helper()
	ctx := testContext(t)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, state := check()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s (test deadline near): %s", what, state)
		case <-tick.C:
		}
	}
}
