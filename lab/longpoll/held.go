package longpoll

import (
	"context"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
)

// heldStats is what sampling a HeldCounter found.
type heldStats struct {
	samples, failed int
	max             int           // most long-polls one worker held
	full            time.Duration // time some worker had every thread holding one
	fullAt          []time.Time   // when a sample found a worker full
	first, last     time.Time     // the first and last successful samples
	lastErr         error
}

// sampleHeld samples hc with the shared sampler (stack.SampleHeldEach)
// every stack.HeldEvery from start to end (the probing window) or until stop is
// called, which returns the statistics. A worker is full when it holds
// threads long-polls; threads 0 is a worker no number of long-polls fills
// (an event loop).
func sampleHeld(ctx context.Context, hc stack.HeldCounter, threads int, start, end time.Time) (stop func() heldStats) {
	var st heldStats
	stopEach := stack.SampleHeldEach(ctx, hc, start, end, func(s stack.HeldSample) {
		if s.Err != nil {
			st.failed++
			st.lastErr = s.Err
			return
		}
		if st.samples == 0 {
			st.first = s.At
		}
		st.samples++
		st.last = s.At
		most := 0
		for _, n := range s.Held {
			most = max(most, n)
		}
		st.max = max(st.max, most)
		if threads > 0 && most >= threads {
			st.full += min(s.Since, 2*stack.HeldEvery)
			st.fullAt = append(st.fullAt, s.At)
		}
	})
	return func() heldStats {
		stopEach()
		return st
	}
}
