package loadgen

import (
	"fmt"
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
