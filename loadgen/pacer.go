package loadgen

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Pacer says when each request of an open-loop schedule is due.
type Pacer interface {
	// Due returns hit's offset from the schedule start, or ok=false when
	// the schedule has no such hit.
	Due(hit int) (offset time.Duration, ok bool)
}

// ConstantPacer sends one request every Interval for Duration: hits at
// 0, Interval, 2*Interval, ... while the offset is below Duration.
type ConstantPacer struct {
	Interval time.Duration
	Duration time.Duration
}

var _ Pacer = ConstantPacer{}

// RatePacer returns a ConstantPacer for rate requests per second.
func RatePacer(rate float64, duration time.Duration) (ConstantPacer, error) {
	if !(rate > 0) || rate > 1e6 {
		return ConstantPacer{}, fmt.Errorf("rate %v: want more than 0 and at most 1e6 requests/s", rate)
	}
	p := ConstantPacer{Interval: time.Duration(float64(time.Second) / rate), Duration: duration}
	return p, p.Validate()
}

// Validate reports a schedule that cannot run.
func (p ConstantPacer) Validate() error {
	if p.Interval <= 0 {
		return fmt.Errorf("interval %s: must be more than 0", p.Interval)
	}
	if p.Duration <= 0 {
		return fmt.Errorf("duration %s: must be more than 0", p.Duration)
	}
	return nil
}

// Due implements Pacer.
func (p ConstantPacer) Due(hit int) (time.Duration, bool) {
	off := time.Duration(hit) * p.Interval
	return off, hit >= 0 && off < p.Duration
}

// Hits is the number of requests in the schedule (72 for 8/s over 9 s).
func (p ConstantPacer) Hits() int {
	if p.Interval <= 0 || p.Duration <= 0 {
		return 0
	}
	return int((p.Duration + p.Interval - 1) / p.Interval)
}

// ShardPacer is shard Index of Count of another schedule: its hit i is
// the schedule's hit i*Count+Index, at the same offset, so Count shards
// started at one instant send together exactly the one schedule (each
// hit once) from Count processes or machines.
type ShardPacer struct {
	Pacer        Pacer
	Index, Count int
}

var _ Pacer = ShardPacer{}

// ParseShard reads "I/N": shard I (from 0) of N, N from 1 to MaxShards.
func ParseShard(s string) (index, count int, err error) {
	i, n, ok := strings.Cut(s, "/")
	index, ierr := strconv.Atoi(i)
	count, nerr := strconv.Atoi(n)
	if !ok || ierr != nil || nerr != nil || count < 1 || count > MaxShards || index < 0 || index >= count {
		return 0, 0, fmt.Errorf("shard %q: want I/N with N from 1 to %d and I from 0 to N-1, e.g. 0/4", s, MaxShards)
	}
	return index, count, nil
}

// MaxShards bounds a shard's count.
const MaxShards = 10000

// Due implements Pacer.
func (p ShardPacer) Due(hit int) (time.Duration, bool) {
	if hit < 0 {
		return 0, false
	}
	return p.Pacer.Due(p.Global(hit))
}

// Global is the schedule's hit that this shard's hit is.
func (p ShardPacer) Global(hit int) int { return hit*p.Count + p.Index }

// Hits is this shard's share of the schedule's hits, when the schedule
// counts them (ConstantPacer), else -1.
func (p ShardPacer) Hits() int {
	h, ok := p.Pacer.(interface{ Hits() int })
	if !ok {
		return -1
	}
	n := h.Hits()
	if n <= p.Index {
		return 0
	}
	return (n - p.Index + p.Count - 1) / p.Count
}
