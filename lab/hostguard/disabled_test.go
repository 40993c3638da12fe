package hostguard

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGuardZeroDisabled: --max-host-cpu 0 disables the guard. Beside a
// guard at 50% on a host fully busy outside the session (a /proc fixture
// advanced by 100 busy ticks at every interval either guard reads), the
// guard at 0 measures nothing and never cancels its run, while the one at
// 50% strikes: the intervals that guard measures are the events the test
// waits for, and each of them is its own.
func TestGuardZeroDisabled(t *testing.T) {
	dir := t.TempDir()
	self := map[int][5]int{100: {1, 0, 0, 0, 0}}
	var mu sync.Mutex
	busy, seen := 0, 0
	procFixture(t, dir, busy, 0, 0, self)
	Observed = func(Usage) {
		mu.Lock()
		defer mu.Unlock()
		seen++
		busy += 100
		procFixture(t, dir, busy, 0, 0, self)
	}
	t.Cleanup(func() { Observed = nil })
	guards := map[float64]*Guard{0: NewGuard(0, dir), 50: NewGuard(50, dir)}
	for _, g := range guards {
		g.self, g.interval = 100, time.Millisecond
	}
	const strikes = 20
	guards[50].strikes = strikes
	off, stopOff := guards[0].Watch(context.Background())
	on, stopOn := guards[50].Watch(context.Background())
	<-on.Done()
	stopOn()
	offErr := off.Err()
	stopOff()
	mu.Lock()
	defer mu.Unlock()
	// The first interval of the guard at 50% is two readings of one
	// fixture: no time, not over; each after it is 100% outside.
	if seen != strikes+1 || offErr != nil || guards[0].Why() != "" {
		t.Errorf("guard at 0: %d intervals measured by both guards, want the %d of the guard at 50%% (cancelled: %v, %q); want none of its own, not cancelled",
			seen, strikes+1, offErr, guards[0].Why())
	}
	if context.Cause(on) != ErrHostBusy {
		t.Errorf("guard at 50%%: %v, want it cancelled for a busy host", context.Cause(on))
	}
}
