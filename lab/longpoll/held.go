package longpoll

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
)

// heldEvery is how often the long-poll experiment samples held long-polls.
const heldEvery = 50 * time.Millisecond

// heldStats is what sampling a HeldCounter found.
type heldStats struct {
	samples, failed int
	max             int           // most long-polls one worker held
	full            time.Duration // time some worker had every thread holding one
	fullAt          []time.Time   // when a sample found a worker full
	first, last     time.Time     // the first and last successful samples
	lastErr         error
}

// sampleHeld samples hc every heldEvery from start to end (the probing
// window) or until stop is called, which returns the statistics. A worker
// is full when it holds threads long-polls; threads 0 is a worker no
// number of long-polls fills (an event loop).
func sampleHeld(ctx context.Context, hc stack.HeldCounter, threads int, start, end time.Time) (stop func() heldStats) {
	done := make(chan struct{})
	result := make(chan heldStats, 1)
	go func() {
		var st heldStats
		defer func() { result <- st }()
		select {
		case <-time.After(time.Until(start)):
		case <-done:
			return
		case <-ctx.Done():
			return
		}
		tick := time.NewTicker(heldEvery)
		defer tick.Stop()
		prev := time.Now()
		for {
			held, err := hc.LongPollsHeld(ctx)
			now := time.Now()
			if now.After(end) {
				return
			}
			if err != nil {
				st.failed++
				st.lastErr = err
			} else {
				if st.samples == 0 {
					st.first = now
				}
				st.samples++
				st.last = now
				most := 0
				for _, n := range held {
					most = max(most, n)
				}
				st.max = max(st.max, most)
				if threads > 0 && most >= threads {
					st.full += min(now.Sub(prev), 2*heldEvery)
					st.fullAt = append(st.fullAt, now)
				}
			}
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
	return func() heldStats {
		close(done)
		return <-result
	}
}
