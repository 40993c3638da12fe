package stack

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// HeldEvery is how often a run samples the requests the app holds.
const HeldEvery = 50 * time.Millisecond

// HeldStats is what sampling the app's held count found: the most
// requests held at once over all workers (Held), and the most workers
// holding at least one at once (Workers); Samples and Failed count the
// reads, LastErr is the last that failed.
type HeldStats struct {
	Samples, Failed int
	Held, Workers   int
	LastErr         error
}

// SampleHeld samples hc every 50 ms until stop is called, which returns
// the statistics. The apps count a long-poll, an SSE stream and a
// WebSocket as held for as long as they serve it.
func SampleHeld(ctx context.Context, hc HeldCounter) (stop func() HeldStats) {
	var st HeldStats
	stopEach := SampleHeldEach(ctx, hc, time.Time{}, time.Time{}, func(s HeldSample) {
		if s.Err != nil {
			st.Failed++
			st.LastErr = s.Err
			return
		}
		st.Samples++
		total, workers := 0, 0
		for _, n := range s.Held {
			total += n
			if n > 0 {
				workers++
			}
		}
		st.Held, st.Workers = max(st.Held, total), max(st.Workers, workers)
	})
	return func() HeldStats {
		stopEach()
		return st
	}
}

// HeldSample is one read of the app's held count: when it ended (At),
// the time since the previous read ended or, for the first, since
// sampling began (Since), the requests each worker held, or why the read
// failed (Err).
type HeldSample struct {
	At    time.Time
	Since time.Duration
	Held  map[string]int
	Err   error
}

// SampleHeldEach reads hc every HeldEvery from start until stop is
// called, ctx ends or a read ends after end, passing each read to each
// (on the sampling goroutine; a read that ends after end is dropped).
// A zero start samples at once, a zero end never ends the sampling. stop
// returns once each has been called for the last time.
func SampleHeldEach(ctx context.Context, hc HeldCounter, start, end time.Time, each func(HeldSample)) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if !start.IsZero() {
			select {
			case <-time.After(time.Until(start)):
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
		tick := time.NewTicker(HeldEvery)
		defer tick.Stop()
		prev := time.Now()
		for {
			held, err := hc.LongPollsHeld(ctx)
			now := time.Now()
			if !end.IsZero() && now.After(end) {
				return
			}
			each(HeldSample{At: now, Since: now.Sub(prev), Held: held, Err: err})
			prev = now
			select {
			case <-tick.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Logger is where SampleRunHeld says why it read no sample (lab.Env is
// one).
type Logger interface {
	Logf(format string, args ...any)
}

// SampleRunHeld samples running's held count, when its app has one, for
// the run id until stop is called: stop stores the most held at once and
// the most workers holding one in held and workers, or logs to log why no
// sample was read (what names what the app holds). Without a counter
// stop leaves both empty.
func SampleRunHeld(ctx context.Context, log Logger, running *Running, id, what string) (stop func(held, workers *recorder.Maybe)) {
	hc, ok := running.HeldCounter()
	if !ok {
		return func(*recorder.Maybe, *recorder.Maybe) {}
	}
	stopHeld := SampleHeld(ctx, hc)
	return func(held, workers *recorder.Maybe) {
		st := stopHeld()
		switch {
		case st.Samples > 0:
			*held, *workers = recorder.Some(float64(st.Held)), recorder.Some(float64(st.Workers))
		case st.LastErr != nil:
			log.Logf("%s: held %s not read: %v", id, what, st.LastErr)
		}
	}
}
