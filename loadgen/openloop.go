package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sys/unix"
)

// OpenLoop sends requests on a fixed schedule, each in its own goroutine, and
// never waits for earlier responses: a slow server cannot slow the schedule,
// it can only make requests pile up. How late each request really started is
// measured as its schedule lag.
type OpenLoop struct {
	Client *Client
	// H2, when set instead of Client, sends each request as a stream on
	// this HTTP/2 connection, read as it comes (URL's path and query): a
	// connection of its own, or one slow streams share.
	H2 *H2Conn
	// H3, when set instead of Client and H2, sends each request as a
	// stream on this HTTP/3 connection, as H2 does.
	H3      *H3Conn
	URL     string
	Pacer   Pacer
	Start   time.Time // schedule start; hit i is due at Start + Pacer.Due(i)
	RunID   string
	Role    string // RoleFast unless set
	Metrics *Metrics
	// OnResult, if set, is called once per request from a single goroutine,
	// in completion order, so a writer can persist rows as they are
	// measured; when the run is cancelled, the hits never sent follow
	// (NotSent, in seq order).
	OnResult func(Result)
	// OnSend, if set, is called with a hit's seq as its request starts,
	// concurrently from the requests' goroutines (and before the hit's
	// OnResult), for a process that keeps the metrics of a load generator
	// running elsewhere: what is in flight.
	OnSend func(seq int)
	// DiscardResults has Run keep no result and return nil: they reach
	// OnResult only, so the memory of a long run does not grow with its
	// requests (`slowlab loadgen` streams its rows and summary this way).
	DiscardResults bool
	// MaxLag, when more than 0, bounds how late a request may start: a hit
	// the loop cannot start within MaxLag of its due time is not sent but
	// skipped, its Result marked Skipped with an error wrapping ErrLate
	// (reason late) and the lag it had then. Beyond the generator's
	// capacity the schedule then keeps its rate instead of collapsing into
	// an ever-growing backlog, and what could not start on time is counted
	// rather than sent late. 0 sends every hit, however late.
	MaxLag time.Duration
	// SpinWindow is how long before a request is due the loop stops
	// sleeping and polls the clock instead, to absorb the wake-up latency
	// of the sleep. The window is capped at an eighth of the gap between
	// requests, so at high rates the loop does not spin away a core.
	// DefaultSpinWindow when 0; negative never spins.
	SpinWindow time.Duration
	// RawSleep has the pacer's nanosleeps keep the Go scheduler's P
	// (a raw system call) instead of entering a system call the runtime
	// sees. Entered, each sleep with a request goroutine just queued on
	// the P keeps sysmon polling every 20 µs and hands the P to another
	// thread and back (futex wake-ups): measured, 29 to 44% of the CPU
	// a request with a new connection costs the generator. Raw, a
	// spinning thread steals the queued request goroutine instead, a
	// little later: the schedule lag p99 on shared cores went from 10%
	// lower to 40% higher (docs/performance.md).
	// The pacer's P is then busy for the whole sleep, at most
	// runtimeTimerSlack, and a stop-the-world pause waits for it; with
	// one P (GOMAXPROCS 1) the requests would wait for the preemption
	// of a 10 ms slice (measured: lag p50 11 ms), so Run then sleeps as
	// without it.
	RawSleep bool
}

// DefaultSpinWindow covers the wake-up latency of the pacer's sleep
// (nanosleep on its own thread with a 1 ns timer slack: tens of µs). At
// 1,000 req/s a 200 µs window cost 0.5 s more CPU per 5 s than 50 µs, and
// no fewer requests started late.
const DefaultSpinWindow = 50 * time.Microsecond

// runtimeTimerSlack is how late a runtime timer may fire when the process
// is otherwise idle: epoll waits whole milliseconds. The pacer leaves the
// last stretch of a wait to nanosleep, which is precise.
const runtimeTimerSlack = 2 * time.Millisecond

// sleepUntil returns at due, or false if ctx ended first. It runs on the
// pacer's own OS thread (see Run): the long part of a wait on a runtime
// timer, which a cancel interrupts, the last runtimeTimerSlack in
// nanosleep, which wakes within tens of µs instead of up to a millisecond
// late, then a spin of at most the spin window.
func (o *OpenLoop) sleepUntil(ctx context.Context, timer *time.Timer, due time.Time, gap time.Duration) bool {
	spin := o.SpinWindow
	if spin == 0 {
		spin = DefaultSpinWindow
	}
	spin = max(0, min(spin, gap/8))
	if wait := time.Until(due) - spin - runtimeTimerSlack; wait > 0 {
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return false
		}
	}
	if ctx.Err() != nil {
		return false
	}
	for {
		wait := time.Until(due) - spin
		if wait <= 0 {
			break
		}
		ts := unix.NsecToTimespec(int64(wait))
		if o.RawSleep && runtime.GOMAXPROCS(0) > 1 {
			rawNanosleep(&ts)
		} else {
			_ = unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
		}
	}
	for time.Now().Before(due) {
		// Busy: yielding (Gosched) would queue the pacer behind every
		// runnable request goroutine.
	}
	return ctx.Err() == nil
}

// rawNanosleep sleeps ts without telling the runtime (see
// OpenLoop.RawSleep); EINTR ends it early and the caller sleeps the rest.
func rawNanosleep(ts *unix.Timespec) {
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(ts)), 0, 0)
}

// lockPacerThread gives the calling goroutine its own OS thread with a
// timer slack of 1 ns, so its nanosleeps are not rounded up by the
// kernel's default 50 µs slack; the returned function restores the slack
// and unlocks. It must be called: a goroutine that exits locked ends its
// thread, and every child process that thread ever forked with a parent
// death signal (child.Start sets SIGKILL) is killed with it — the lab's
// Gunicorn died mid-run that way.
func lockPacerThread() (unlock func()) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // best effort: precision only
	return func() {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // 0: back to the thread's default
		runtime.UnlockOSThread()
	}
}

// pace sends the schedule: one goroutine per hit, started at its due
// time. It returns the first hit not sent because ctx ended, or -1.
func (o *OpenLoop) pace(ctx context.Context, lbl *labels, attrs []attribute.KeyValue, results chan<- Result, wg *sync.WaitGroup) int {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var prev time.Duration
	for hit := 0; ; hit++ {
		off, ok := o.Pacer.Due(hit)
		if !ok {
			return -1
		}
		due := o.Start.Add(off)
		gap := off - prev
		prev = off
		if !o.sleepUntil(ctx, timer, due, gap) {
			return hit
		}
		if o.MaxLag > 0 {
			if lag := time.Since(due); lag > o.MaxLag {
				results <- o.skip(lbl, hit, due, lag)
				continue
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Result{Seq: o.seq(hit), Scheduled: true, ScheduledAt: due, Start: time.Now()}
			r.ScheduleLag = r.Start.Sub(due)
			if o.MaxLag > 0 && r.ScheduleLag > o.MaxLag {
				results <- o.skip(lbl, hit, due, r.ScheduleLag)
				return
			}
			lbl.start()
			if o.OnSend != nil {
				o.OnSend(hit)
			}
			if o.H2 != nil || o.H3 != nil {
				o.streamGet(&r)
			} else {
				o.Client.get(ctx, o.URL, &r, attrs)
			}
			lbl.observe(&r)
			results <- r
		}()
	}
}

// streamGet is one request as a stream on o.H2 or o.H3: its timings from
// when the hit started (the stream's HEADERS go out after any wait for
// the connection's writer, or for the server's stream limit), no new
// connection.
func (o *OpenLoop) streamGet(r *Result) {
	r.Proto = ProtoHTTP2
	if o.H3 != nil {
		r.Proto = ProtoHTTP3
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		r.Err, r.Latency = err, time.Since(r.Start)
		return
	}
	var ch <-chan H2Result
	if o.H3 != nil {
		r.Conn, ch = o.H3.LocalAddr(), o.H3.Get(u.RequestURI(), H2Read{})
	} else {
		r.Conn, ch = o.H2.LocalAddr(), o.H2.Get(u.RequestURI(), H2Read{})
	}
	res := <-ch
	r.Stream = res.StreamID
	wait := res.Start.Sub(r.Start)
	r.TTFB, r.Latency = wait+res.FirstByte, wait+res.Total
	r.Status, r.Bytes, r.Err = res.Status, res.Bytes, res.Err
	if r.Err == nil && !res.Complete {
		r.Err = fmt.Errorf("%s stream %d: response incomplete (status %d, %d bytes)", strings.ToLower(r.Proto), res.StreamID, res.Status, res.Bytes)
	}
}

// seq is hit's number in the whole schedule: a shard's (ShardPacer) hit
// is numbered as in the schedule it is a shard of.
func (o *OpenLoop) seq(hit int) int {
	if g, ok := o.Pacer.(interface{ Global(int) int }); ok {
		return g.Global(hit)
	}
	return hit
}

// ErrLate is wrapped by the error of an open-loop request skipped because
// it could not start within OpenLoop.MaxLag of its schedule.
var ErrLate = errors.New("late")

// skip is the result of a hit skipped lag after its due time.
func (o *OpenLoop) skip(lbl *labels, hit int, due time.Time, lag time.Duration) Result {
	lbl.skipped()
	return Result{Seq: o.seq(hit), Scheduled: true, ScheduledAt: due, ScheduleLag: lag, Skipped: true,
		Err: fmt.Errorf("%w: not started, %v behind schedule (max lag %v)", ErrLate, lag.Round(time.Microsecond), o.MaxLag)}
}

// MaxPlanned is the most hits a schedule can have for its unsent hits to
// be accounted: every result is kept in memory, and a cancelled run would
// otherwise allocate the rest of a day-long schedule at once.
const MaxPlanned = 10_000_000

// Planned returns how many requests the schedule has: the Pacer's Hits when
// it has that method (ConstantPacer does), else the hits counted with Due;
// -1 when that is more than MaxPlanned (or the schedule has no end).
func (o *OpenLoop) Planned() int {
	if h, ok := o.Pacer.(interface{ Hits() int }); ok {
		switch n := h.Hits(); {
		case n > MaxPlanned:
			return -1
		case n >= 0:
			return n
		} // negative: it does not count them (a shard of a schedule that does not)
	}
	for hit := 0; hit <= MaxPlanned; hit++ {
		if _, ok := o.Pacer.Due(hit); !ok {
			return hit
		}
	}
	return -1
}

// Run sends the schedule and returns a result for every hit in schedule
// order. Cancelling ctx stops the schedule: requests in flight end with a
// canceled error and still get their result, and every hit not yet started
// gets one with NotSent set and Err ErrNotSent (after the started ones, in
// OnResult too), so each of the Planned hits is accounted exactly once. A
// schedule without a Planned count (-1) gets no NotSent results.
func (o *OpenLoop) Run(ctx context.Context) []Result {
	role := o.Role
	if role == "" {
		role = RoleFast
	}
	lbl := o.Metrics.with(o.RunID, role)
	var attrs []attribute.KeyValue
	if o.Client != nil {
		attrs = o.Client.spanAttrs(o.URL, o.RunID, role)
	}
	results, collected := collect(o.OnResult, o.DiscardResults)

	// The pacer runs on a goroutine of its own, locked to its own OS
	// thread, so its sleeps are precise and no request goroutine shares
	// its thread's timers.
	var wg sync.WaitGroup
	paced := make(chan int)
	go func() {
		unlock := lockPacerThread()
		defer unlock()
		paced <- o.pace(ctx, lbl, attrs, results, &wg)
	}()
	stopped := <-paced // the first hit not sent, when ctx ended first; else -1
	wg.Wait()
	if stopped >= 0 {
		for hit, planned := stopped, o.Planned(); hit < planned; hit++ {
			off, ok := o.Pacer.Due(hit)
			if !ok {
				break
			}
			lbl.notSent()
			results <- Result{Seq: o.seq(hit), Scheduled: true, ScheduledAt: o.Start.Add(off), NotSent: true, Err: ErrNotSent}
		}
	}
	close(results)
	out := collected()
	if o.DiscardResults {
		return nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
