package lab

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
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
func SampleHeld(ctx context.Context, hc stack.HeldCounter) (stop func() HeldStats) {
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
