// Package hostguard owns the host-CPU guard of a session (--max-host-cpu,
// --max-schedule-lag): it watches the CPU used outside the session while
// a run measures and cancels the run (ErrHostBusy, with Why's reason)
// when the host stays busy with other work, and it judges a finished
// run's row whose load generator fell behind its schedule (Late). The
// session's own CPU time is its process tree's (sessionCPU), read from
// /proc.
//
// What it leaves to others: deciding to try a run again, how often and
// after which pause, is the run loop's (lab.Matrix, HostBusyRetries);
// the flags are lab's Options; a run row says its own lag (MaxLag).
package hostguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Guard watches the CPU used outside the session during a run and
// cancels the run when it stays above max: a machine busy with other work
// would make the measurements about that work. The session's own load
// (its stack, load generator and exporter, which closed-loop probes keep
// busy) is the experiment, not other work, and never counts: each
// interval, the host's busy time from /proc/stat (all CPUs) less the CPU
// time of the session's processes (this process and every descendant,
// live or reaped; see sessionCPU), as a fraction of the interval's CPU
// time.
type Guard struct {
	max      float64 // fraction, 0 disables
	interval time.Duration
	strikes  int // consecutive intervals above max that abort the run
	procfs   string
	self     int           // the session's first process: this one
	maxLag   time.Duration // SetMaxLag's

	mu     sync.Mutex
	reason string
}

// NewGuard returns a guard that cancels a run while the CPU used outside
// this session stays above maxPercent (0 disables it); procRoot is where
// /proc is mounted.
func NewGuard(maxPercent float64, procRoot string) *Guard {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	return &Guard{max: maxPercent / 100, interval: time.Second, strikes: 2, procfs: procRoot, self: os.Getpid()}
}

// Watch returns a context that is cancelled, with cause ErrHostBusy, when
// the host is too busy with work outside the session, and a stop
// function. Why says why, after that.
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
		prev, err := g.read(fs)
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
			cur, err := g.read(fs)
			if err != nil {
				return
			}
			u := usage(prev, cur)
			prev = cur
			if Observed != nil {
				Observed(u)
			}
			if u.Outside <= g.max {
				over = 0
				continue
			}
			if over++; over >= g.strikes {
				g.mu.Lock()
				g.reason = fmt.Sprintf("host CPU used outside this session %.0f%% above --max-host-cpu %.0f%% for %d s (host %.0f%%, this session %.0f%%)",
					u.Outside*100, g.max*100, over, u.Host*100, u.Session*100)
				g.mu.Unlock()
				cancel(ErrHostBusy)
				return
			}
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}

// Observed, when set (by tests, before a guard watches), is given every
// interval's usage a guard measured, as it measures it.
var Observed func(Usage)

// Why says why the guard cancelled a run.
func (g *Guard) Why() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason
}

// lagged is a run row that records its load generator's schedule lag.
type lagged interface{ MaxLag() (ms float64, ok bool) }

// SetMaxLag sets the largest schedule lag Late lets pass (0: none is
// judged); a nil guard judges none.
func (g *Guard) SetMaxLag(d time.Duration) {
	if g != nil {
		g.maxLag = d
	}
}

// Late says why run, whose row records its load generator's schedule
// lag, is judged a stalled instrument (its largest lag over the maximum
// SetMaxLag set), or "" when it is not (or its row records no lag).
func (g *Guard) Late(run any) string {
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

// reading is one look at the CPU time of the host (/proc/stat, all
// CPUs, in seconds) and of the session's processes.
type reading struct {
	host    procfs.CPUStat
	session float64 // CPU seconds, sessionCPU
}

// read reads the host's CPU time and the session's.
func (g *Guard) read(fs procfs.FS) (reading, error) {
	st, err := fs.Stat()
	if err != nil {
		return reading{}, err
	}
	s, err := sessionCPU(fs, g.self)
	if err != nil {
		return reading{}, err
	}
	return reading{host: st.CPUTotal, session: s}, nil
}

// Usage is an interval's CPU use, each a fraction of all CPUs' time:
// the host's, the session's and what is left, the use outside the
// session.
type Usage struct{ Host, Session, Outside float64 }

// usage is the CPU use between readings a and b. The host's is 1 -
// idle/total; time spent in processes at a lower priority (nice > 0)
// counts as idle: such work yields the CPU to the run's processes (nice
// 0), as a batch job or `make test-loaded`'s hog does, so it does not
// make the run's measurements about it. Outside is the host's less the
// session's, never below 0 (the two counters tick apart, so the session
// can seem to have used a little more than the host did).
func usage(a, b reading) Usage {
	total := sum(b.host) - sum(a.host)
	if total <= 0 {
		return Usage{}
	}
	idle := (b.host.Idle + b.host.Iowait + b.host.Nice) - (a.host.Idle + a.host.Iowait + a.host.Nice)
	busy := total - idle
	own := b.session - a.session
	return Usage{Host: busy / total, Session: own / total, Outside: max(0, busy-own) / total}
}
func sum(c procfs.CPUStat) float64 {
	return c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
}
