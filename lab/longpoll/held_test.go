package longpoll

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"

	"github.com/slowlab/slowlab/internal/slowlabtest"
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
	slowlabtest.Timing(t)
	full, spread := map[string]int{"101": 16, "102": 4}, map[string]int{"101": 10, "102": 10}
	hc := &scriptedHeld{script: []map[string]int{full, full, full, nil, spread}}
	start := time.Now()
	window := 20 * stack.HeldEvery
	st := sampleHeld(context.Background(), hc, 16, start, start.Add(window))()
	// stop right away: at most the first sample was taken
	if st.samples+st.failed > 1 {
		t.Errorf("stopped at once, yet %d samples", st.samples+st.failed)
	}

	// A window long enough for the whole script however late a loaded
	// machine runs the sampler, stopped once the script was sampled.
	hc.calls.Store(0)
	start = time.Now()
	long := 2000 * stack.HeldEvery
	stop := sampleHeld(context.Background(), hc, 16, start, start.Add(long))
	slowlabtest.WaitFor(t, "every scripted sample taken", func() bool { return int(hc.calls.Load()) >= len(hc.script) }, nil)
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
	stop = sampleHeld(context.Background(), hc, 16, start, start.Add(2*stack.HeldEvery))
	time.Sleep(20 * stack.HeldEvery)
	stop()
	if n := int(hc.calls.Load()); n > 4 {
		t.Errorf("%d samples in a window of 2 periods: sampling did not stop at the end", n)
	}

	none := &scriptedHeld{script: []map[string]int{spread}}
	start = time.Now()
	stop = sampleHeld(context.Background(), none, 16, start, start.Add(long))
	slowlabtest.WaitFor(t, "3 samples taken", func() bool { return none.calls.Load() >= 3 }, nil)
	if st := stop(); st.full != 0 || st.max != 10 || st.samples == 0 {
		t.Errorf("spread 10/10 of 16 threads: %+v, want max 10, never full", st)
	}
}

// gunicornRun.LongPollsHeld reads app.py's per-worker files: live workers
// only, fixed-width counts, a clear error for a file that is not a count.

// Waves are counted over the span the workers were sampled, not over the
// probes' elapsed time: a probe stuck behind a full worker can end 30 s
// after sampling stopped, and the wave issued meanwhile was never seen.
func TestSummarizeHeldCountsSampledWaves(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	c := &Config{Wait: lab.Duration(30 * time.Second), Lead: lab.Duration(2 * time.Second)}
	m := &measured{t0: t0,
		// three waves of 20 long-polls: at 0, 30 and 60 s
		issues: []time.Time{at(0), at(30), at(30.002), at(60), at(60.001)},
		held: heldStats{samples: 800, max: 16, full: 10 * time.Second,
			first: at(2), last: at(42), fullAt: []time.Time{at(35), at(36)}}}
	g := Group{ElapsedS: 62, WorkerSlots: recorder.Some(16)} // a stuck probe ended 22 s after the 40 s window
	c.summarizeHeld(&g, m, Condition{Server: "gthread-2x16", Hold: 20, Probes: 20}, &lab.Env{})
	if g.Waves != recorder.Some(2) || g.FullWaves != recorder.Some(1) {
		t.Errorf("waves %v, full %v; want 2 (the wave at 60 s was never sampled), 1", g.Waves, g.FullWaves)
	}
	if g.HeldSamples != 800 || g.MaxWorkerHeld != recorder.Some(16) || g.FullWorkerS != recorder.Some(10) || g.FullSamples != recorder.Some(2) {
		t.Errorf("samples %d, max %v, full_s %v, full samples %v", g.HeldSamples, g.MaxWorkerHeld, g.FullWorkerS, g.FullSamples)
	}

	// An event loop has no worker slots to fill: how many long-polls a
	// worker held is measured, "full" does not apply.
	u := Group{ElapsedS: 62}
	c.summarizeHeld(&u, m, Condition{Server: "node-2", Hold: 20, Probes: 20}, &lab.Env{})
	if u.MaxWorkerHeld != recorder.Some(16) || u.FullWorkerS.Valid || u.FullSamples.Valid || u.Waves.Valid || u.FullWaves.Valid {
		t.Errorf("unbounded server: max %v, full_s %v, waves %v/%v; want 16 and the rest empty", u.MaxWorkerHeld, u.FullWorkerS, u.FullWaves, u.Waves)
	}
}
