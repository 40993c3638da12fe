package netem

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MaxP99Lateness is the most a delay line's p99 lateness may be for its
// measurements to count (Lateness.Valid). A variable only so that tests can
// make every path invalid; nothing else changes it.
var MaxP99Lateness = time.Millisecond

// UncountedLoss is a fault for tests: the percentage of packets every
// delay line drops at random, after LineConfig.Loss, without counting them
// anywhere, as a dropper whose count is wrong would. A variable only so
// that tests can check that a path's loss is measured at its ends
// (Transit) and not taken from its own count; nothing else sets it. Set
// it before a line starts.
var UncountedLoss float64

// DefaultQueueLimit is how many packets a delay line holds before it drops
// (netem's default limit).
const DefaultQueueLimit = 1000

// Device is one end of a delay line: each Read returns one packet and each
// Write sends one. A TUN device opened with IFF_NO_PI is one.
type Device interface {
	io.Reader
	io.Writer
}

// LineConfig configures a DelayLine.
type LineConfig struct {
	Delay      time.Duration // added to every packet
	Loss       float64       // percent of packets dropped at random on arrival
	Rate       int64         // bytes per second the line paces at; 0 for no limit
	QueueLimit int           // packets waiting; more are dropped; DefaultQueueLimit when 0
	MaxPacket  int           // largest packet read; 65535 when 0
}

// DelayLine forwards packets from one Device to another, each Delay after
// it arrived, in arrival order: a packet is due at max(arrival + Delay,
// the previous packet's due), or, with a Rate, after the packets before it
// have been paced out at Rate and then Delay. A reader goroutine stamps and
// queues packets; a writer goroutine sleeps with nanosleep until each is due
// and writes it, because the Go timer wakes up to a millisecond late when
// the process is idle. Both run on threads of their own (see realtime).
type DelayLine struct {
	c     LineConfig
	src   Device
	dst   Device
	queue chan packet
	wg    sync.WaitGroup

	uncounted float64 // UncountedLoss when the line started

	// reader state
	lastDue, txFree time.Time
	stopped         atomic.Bool // the reader has ended

	mu      sync.Mutex
	late    []time.Duration // lateness of packets written since the last take
	dropped int             // packets dropped (queue full, write failed, line closed) since the last take

	// Since the start: packets read, those dropped at random (Loss) and
	// those dropped because the queue was full.
	arrived, lost, overflow atomic.Int64
	inFlight                atomic.Int64 // queued, being written, or written and not yet accounted
	err                     error        // why the reader stopped, if not a close
}

type packet struct {
	data []byte
	due  time.Time
}

// StartLine starts forwarding from src to dst. It runs until src's Read
// fails (close src to stop it); packets still queued then are dropped, and
// Wait returns.
func StartLine(src, dst Device, c LineConfig) *DelayLine {
	if c.QueueLimit <= 0 {
		c.QueueLimit = DefaultQueueLimit
	}
	if c.MaxPacket <= 0 {
		c.MaxPacket = 65535
	}
	l := &DelayLine{c: c, src: src, dst: dst, queue: make(chan packet, c.QueueLimit), uncounted: UncountedLoss}
	procs.add(2)
	l.wg.Add(2)
	go l.read()
	go l.write()
	return l
}

// Wait waits until both goroutines have ended and returns the read error
// that stopped the line, nil if it was a close.
func (l *DelayLine) Wait() error {
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *DelayLine) read() {
	defer l.wg.Done()
	defer procs.add(-1)
	defer close(l.queue) // the writer discards what is left, then ends
	defer l.stopped.Store(true)
	defer realtime()()
	buf := make([]byte, l.c.MaxPacket)
	for {
		n, err := l.src.Read(buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
			}
			return
		}
		now := time.Now()
		l.arrived.Add(1)
		if l.c.Loss > 0 && rand.Float64()*100 < l.c.Loss {
			l.lost.Add(1)
			continue
		}
		if l.uncounted > 0 && rand.Float64()*100 < l.uncounted {
			continue // a test's fault: dropped, not counted
		}
		if len(l.queue) == cap(l.queue) {
			l.overflow.Add(1)
			l.mu.Lock()
			l.dropped++
			l.mu.Unlock()
			continue
		}
		l.inFlight.Add(1)
		l.queue <- packet{data: slices.Clone(buf[:n]), due: l.schedule(now, n)}
	}
}

// schedule returns when a packet of size bytes arriving at now is due.
func (l *DelayLine) schedule(now time.Time, size int) time.Time {
	leave := now
	if l.c.Rate > 0 {
		if l.txFree.After(leave) {
			leave = l.txFree
		}
		leave = leave.Add(time.Duration(int64(size) * int64(time.Second) / l.c.Rate))
		l.txFree = leave
	}
	due := leave.Add(l.c.Delay)
	if due.Before(l.lastDue) {
		due = l.lastDue
	}
	l.lastDue = due
	return due
}

func (l *DelayLine) write() {
	defer l.wg.Done()
	defer procs.add(-1)
	defer realtime()()
	for p := range l.queue {
		if l.stopped.Load() {
			l.mu.Lock()
			l.dropped++ // closing: nothing waits for these any more
			l.mu.Unlock()
			l.inFlight.Add(-1)
			continue
		}
		sleepUntil(p.due)
		_, err := l.dst.Write(p.data)
		late := time.Since(p.due)
		l.mu.Lock()
		if err != nil {
			l.dropped++
		} else {
			l.late = append(l.late, late)
		}
		l.mu.Unlock()
		// Out of flight only once its lateness is recorded, so a path
		// that holds nothing has every packet it forwarded in the next
		// TakeLateness (the receiver can read a packet before that).
		l.inFlight.Add(-1)
	}
}

// procs raises GOMAXPROCS by one for each running delay-line thread. A
// thread coming back from a blocking system call (the sleep until a packet
// is due, the wait for the next packet) needs a P to run Go code; with only
// the default Ps it can wait milliseconds for the scheduler to free one,
// which would delay packets. With a spare P per line thread it finds one
// idle. The original value is restored when the last line ends (which
// turns off the runtime's automatic GOMAXPROCS updates for the process).
var procs spareProcs

type spareProcs struct {
	mu          sync.Mutex
	base, extra int
}

func (s *spareProcs) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extra == 0 {
		s.base = runtime.GOMAXPROCS(0)
	}
	s.extra += n
	runtime.GOMAXPROCS(s.base + s.extra)
}

// rtPriority is the SCHED_FIFO priority of the delay line's threads: low
// among real-time threads, above every normal one.
const rtPriority = 10

// realtime locks the goroutine to its thread and, where allowed
// (CAP_SYS_NICE), makes the thread SCHED_FIFO so that a busy host does not
// hold it back when a packet arrives or falls due, with a 1 ns timer slack
// (the default 50 us would make every sleep that much late). The returned
// function restores the thread before unlocking it; if it cannot, the
// thread ends with the goroutine.
func realtime() (restore func()) {
	runtime.LockOSThread()
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return func() {}
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	old, err := unix.SchedGetAttr(0, 0)
	rt := err == nil && unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: rtPriority}, 0) == nil
	return func() {
		ok := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0) == nil
		if rt {
			ok = unix.SchedSetAttr(0, old, 0) == nil && ok
		}
		if ok {
			runtime.UnlockOSThread()
		}
	}
}

// sleepUntil blocks the thread until t.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := unix.NsecToTimespec(d.Nanoseconds())
		unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}

// TakeLateness returns the lateness of the packets forwarded since the
// previous call.
func (l *DelayLine) TakeLateness() Lateness {
	late, dropped := l.take()
	return summarize(late, dropped)
}

func (l *DelayLine) take() ([]time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	late, dropped := l.late, l.dropped
	l.late, l.dropped = nil, 0
	return late, dropped
}

// Counts returns the packets the line has read since it started, how
// many of them it dropped at random (LineConfig.Loss) and how many
// because its queue was full (LineConfig.QueueLimit).
func (l *DelayLine) Counts() Loss {
	return Loss{Packets: l.arrived.Load(), Lost: l.lost.Load(), Overflow: l.overflow.Load()}
}

// Loss is how many packets entered a path (or a line), by its own count,
// how many of them it dropped at random (Lost), and how many because its
// queue was full (Overflow, as under a rate limit; not in Lost).
type Loss struct {
	Packets, Lost, Overflow int64
}

// Pct is the share of the packets lost, in percent (0 without packets).
func (l Loss) Pct() float64 {
	if l.Packets == 0 {
		return 0
	}
	return 100 * float64(l.Lost) / float64(l.Packets)
}

// Sub returns the packets and losses since before.
func (l Loss) Sub(before Loss) Loss {
	return Loss{Packets: l.Packets - before.Packets, Lost: l.Lost - before.Lost, Overflow: l.Overflow - before.Overflow}
}

// Lateness is how late a delay line wrote packets: actual write minus due.
type Lateness struct {
	Packets, Dropped int
	P50, P99, Max    time.Duration
}

// Valid reports whether the line delayed faithfully: no packets, or a p99
// lateness of at most MaxP99Lateness.
func (l Lateness) Valid() bool { return l.Packets == 0 || l.P99 <= MaxP99Lateness }

// summarize computes nearest-rank percentiles of late.
func summarize(late []time.Duration, dropped int) Lateness {
	s := Lateness{Packets: len(late), Dropped: dropped}
	if len(late) == 0 {
		return s
	}
	slices.Sort(late)
	rank := func(p int) time.Duration { return late[max(1, (p*len(late)+99)/100)-1] }
	s.P50, s.P99, s.Max = rank(50), rank(99), late[len(late)-1]
	return s
}
