package sse

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
)

// heldEvery is how often a run samples the streams the app holds.
const heldEvery = 50 * time.Millisecond

// heldStats is what sampling the app's held count found: the most streams
// held at once over all workers, and the most workers holding at least
// one at once.
type heldStats struct {
	samples, failed int
	held, workers   int
	lastErr         error
}

// sampleHeld samples hc every heldEvery until stop is called, which
// returns the statistics. The apps count an SSE stream as held (as a
// long-poll) for as long as they write it.
func sampleHeld(ctx context.Context, hc stack.HeldCounter) (stop func() heldStats) {
	done := make(chan struct{})
	result := make(chan heldStats, 1)
	go func() {
		var st heldStats
		defer func() { result <- st }()
		tick := time.NewTicker(heldEvery)
		defer tick.Stop()
		for {
			if held, err := hc.LongPollsHeld(ctx); err != nil {
				st.failed++
				st.lastErr = err
			} else {
				st.samples++
				total, workers := 0, 0
				for _, n := range held {
					total += n
					if n > 0 {
						workers++
					}
				}
				st.held, st.workers = max(st.held, total), max(st.workers, workers)
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
	return func() heldStats {
		close(done)
		return <-result
	}
}
