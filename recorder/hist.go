package recorder

import (
	"math"
	"math/bits"
	"time"
)

// histBits is the log-linear histogram's precision: 2^histBits buckets per
// power of two, so a percentile is within 1/2048 of the value it stands
// for: 0.5 µs at 1 ms, but 15 ms at 30 s, over a printed 0.1 ms (the
// long-poll experiment reads its exact percentiles back from its file).
const histBits = 10

// DurationHist counts durations in log-linear buckets: exact below 2 µs,
// then 1024 buckets per power of two. Its memory is bounded by the
// largest duration (at most 55 × 1024 counts), not by how many it counts,
// so an hour-long run's percentiles cost what a second-long one's do. The
// zero value is empty and ready.
type DurationHist struct {
	counts   []uint64
	n        uint64
	min, max time.Duration
}

// histIndex is the bucket of v (v >= 0).
func histIndex(v uint64) int {
	b := bits.Len64(v)
	if b <= histBits+1 {
		return int(v)
	}
	shift := b - (histBits + 1)
	return (shift+1)<<histBits + int((v>>shift)&(1<<histBits-1))
}

// histValue is the middle of bucket i.
func histValue(i int) uint64 {
	if i < 1<<(histBits+1) {
		return uint64(i)
	}
	shift := i>>histBits - 1
	low := (1<<histBits + uint64(i&(1<<histBits-1))) << shift
	return low + (1<<shift)/2
}

// Add counts d (a negative d counts as 0 in the buckets).
func (h *DurationHist) Add(d time.Duration) {
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if h.n == 0 || d > h.max {
		h.max = d
	}
	h.n++
	i := histIndex(uint64(max(d, 0)))
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]uint64, i+1-len(h.counts))...)
	}
	h.counts[i]++
}

// N is how many durations were counted.
func (h *DurationHist) N() int { return int(h.n) }

// Percentile is the p-th nearest-rank percentile (0 < p <= 100, at Rank) in ms,
// within the bucket precision, never outside the smallest and largest
// values counted; p 100 is the exact maximum. NaN when nothing was counted.
func (h *DurationHist) Percentile(p float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	if p >= 100 {
		return msOf(h.max)
	}
	rank := uint64(Rank(int(h.n), p))
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return msOf(min(max(time.Duration(histValue(i)), h.min), h.max))
		}
	}
	return msOf(h.max)
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
