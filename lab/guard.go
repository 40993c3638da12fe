package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Guard watches host CPU utilisation during a run and cancels the run
// when it stays above max: a machine busy with other work would make the
// measurements about that work. Utilisation is 1 - idle/total over each
// interval from /proc/stat (all CPUs).
type Guard struct {
	max      float64 // fraction, 0 disables
	interval time.Duration
	strikes  int // consecutive intervals above max that abort the run
	procfs   string
	maxLag   time.Duration // Env.MaxScheduleLag

	mu     sync.Mutex
	reason string
}

// NewGuard returns a guard that cancels a run while host CPU stays above
// maxPercent (0 disables it); procRoot is where /proc is mounted.
func NewGuard(maxPercent float64, procRoot string) *Guard {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	return &Guard{max: maxPercent / 100, interval: time.Second, strikes: 2, procfs: procRoot}
}

// Watch returns a context that is cancelled, with cause ErrHostBusy, when
// the host is too busy, and a stop function. Why says why, after that.
func (g *Guard) Watch(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if g == nil || g.max <= 0 {
		return ctx, func() { cancel(nil) }
	}
	fs, err := procfs.NewFS(g.procfs)
	if err != nil {
		return ctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		prev, err := fs.Stat()
		if err != nil {
			return
		}
		t := time.NewTicker(g.interval)
		defer t.Stop()
		over := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cur, err := fs.Stat()
			if err != nil {
				return
			}
			busy := utilisation(prev.CPUTotal, cur.CPUTotal)
			prev = cur
			if busy <= g.max {
				over = 0
				continue
			}
			if over++; over >= g.strikes {
				g.mu.Lock()
				g.reason = fmt.Sprintf("host CPU %.0f%% above --max-host-cpu %.0f%% for %d s", busy*100, g.max*100, over)
				g.mu.Unlock()
				cancel(ErrHostBusy)
				return
			}
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}

// Why says why the guard cancelled a run.
func (g *Guard) Why() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason
}

// lagged is a run row that records its load generator's schedule lag.
type lagged interface{ MaxLag() (ms float64, ok bool) }

// late says why run, whose row records its load generator's schedule
// lag, is judged a stalled instrument (its largest lag over maxLag), or
// "" when it is not (or its row records no lag).
func (g *Guard) late(run any) string {
	l, ok := run.(lagged)
	if g == nil || g.maxLag <= 0 || !ok {
		return ""
	}
	ms, ok := l.MaxLag()
	if !ok || ms <= float64(g.maxLag)/float64(time.Millisecond) {
		return ""
	}
	return fmt.Sprintf("load generator %.0f ms behind its schedule, over --max-schedule-lag %s: the host stalled the instrument", ms, g.maxLag)
}

// ErrHostBusy is the cause of a run the guard cancelled.
var ErrHostBusy = errors.New("host too busy")

// utilisation is the busy fraction of all CPUs between two /proc/stat reads.
// Time spent in processes at a lower priority (nice > 0) counts as idle:
// such work yields the CPU to the run's processes (nice 0), as a batch
// job or `make test-loaded`'s hog does, so it does not make the run's
// measurements about it.
func utilisation(a, b procfs.CPUStat) float64 {
	idle := (b.Idle + b.Iowait + b.Nice) - (a.Idle + a.Iowait + a.Nice)
	total := sum(b) - sum(a)
	if total <= 0 {
		return 0
	}
	return 1 - idle/total
}

func sum(c procfs.CPUStat) float64 {
	return c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
}
