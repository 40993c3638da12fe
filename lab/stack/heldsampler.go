package stack

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// heldEvery is how often a run samples the requests the app holds.
const heldEvery = 50 * time.Millisecond

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
	done := make(chan struct{})
	result := make(chan HeldStats, 1)
	go func() {
		var st HeldStats
		defer func() { result <- st }()
		tick := time.NewTicker(heldEvery)
		defer tick.Stop()
		for {
			if held, err := hc.LongPollsHeld(ctx); err != nil {
				st.Failed++
				st.LastErr = err
			} else {
				st.Samples++
				total, workers := 0, 0
				for _, n := range held {
					total += n
					if n > 0 {
						workers++
					}
				}
				st.Held, st.Workers = max(st.Held, total), max(st.Workers, workers)
			}
			select {
			case <-tick.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() HeldStats {
		close(done)
		return <-result
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
