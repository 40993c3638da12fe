package longpoll

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedHeld answers LongPollsHeld from a script, one entry per call,
// repeating the last; an entry of nil is an error.
type scriptedHeld struct {
	script []map[string]int
	calls  atomic.Int32
}

func (s *scriptedHeld) LongPollsHeld(context.Context) (map[string]int, error) {
	i := min(int(s.calls.Add(1))-1, len(s.script)-1)
	if s.script[i] == nil {
		return nil, errors.New("scrape failed")
	}
	return s.script[i], nil
}

func TestSampleHeld(t *testing.T) {
	full, spread := map[string]int{"101": 16, "102": 4}, map[string]int{"101": 10, "102": 10}
	hc := &scriptedHeld{script: []map[string]int{full, full, full, nil, spread}}
	start := time.Now()
	window := 20 * heldEvery
	st := sampleHeld(context.Background(), hc, 16, start, start.Add(window))()
	// stop right away: at most the first sample was taken
	if st.samples+st.failed > 1 {
		t.Errorf("stopped at once, yet %d samples", st.samples+st.failed)
	}

	// A window long enough for the whole script however late a loaded
	// machine runs the sampler, stopped once the script was sampled.
	hc.calls.Store(0)
	start = time.Now()
	long := 2000 * heldEvery
	stop := sampleHeld(context.Background(), hc, 16, start, start.Add(long))
	waitFor(t, func() bool { return int(hc.calls.Load()) >= len(hc.script) })
	st = stop()
	if st.max != 16 {
		t.Errorf("max = %d, want 16", st.max)
	}
	if st.failed != 1 || st.lastErr == nil {
		t.Errorf("failed = %d (%v), want the one scripted error", st.failed, st.lastErr)
	}
	if elapsed := time.Since(start); st.full <= 0 || st.full > elapsed {
		t.Errorf("full = %s, want some of the %s sampled", st.full, elapsed)
	}

	// Sampling ends with its window: long after a window of 2 periods, at
	// most the samples of those periods (and the one that found the
	// window over) were taken. A slow machine takes fewer, never more.
	hc.calls.Store(0)
	start = time.Now()
	stop = sampleHeld(context.Background(), hc, 16, start, start.Add(2*heldEvery))
	time.Sleep(20 * heldEvery)
	stop()
	if n := int(hc.calls.Load()); n > 4 {
		t.Errorf("%d samples in a window of 2 periods: sampling did not stop at the end", n)
	}

	none := &scriptedHeld{script: []map[string]int{spread}}
	start = time.Now()
	stop = sampleHeld(context.Background(), none, 16, start, start.Add(long))
	waitFor(t, func() bool { return none.calls.Load() >= 3 })
	if st := stop(); st.full != 0 || st.max != 10 || st.samples == 0 {
		t.Errorf("spread 10/10 of 16 threads: %+v, want max 10, never full", st)
	}
}

// waitFor polls cond until it holds; the 60 s bound only keeps a broken
// test from hanging.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gunicornRun.LongPollsHeld reads app.py's per-worker files: live workers
// only, fixed-width counts, a clear error for a file that is not a count.
