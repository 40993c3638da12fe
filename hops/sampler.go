package hops

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/slowlab/slowlab/internal/sockdiag"
)

// DefaultInterval is how often a Sampler samples unless told otherwise.
const DefaultInterval = 50 * time.Millisecond

// ProxyBuffer is what a reporting proxy says about one response it is
// relaying: the client's address as the proxy sees it, its own address
// on the connection to the app, and the body bytes it holds and has moved.
// For the identity UpstreamRead = Memory + TempFile + ClientWritten to be
// usable the proxy must report all four from one consistent moment.
type ProxyBuffer struct {
	Client        netip.AddrPort
	UpstreamLocal netip.AddrPort
	Memory        int64
	TempFile      int64
	UpstreamRead  int64
	ClientWritten int64
	// Skew is how far UpstreamRead and ClientWritten moved together
	// between the reports read before and after the socket dump: the
	// sample's uncertainty for this response (all its bytes for one in
	// only one of the two reports: it started or ended meanwhile).
	Skew int64
}

// Sample is one moment: the sockets on the stack's ports and what the
// proxy reported.
type Sample struct {
	T       time.Duration // since the sampling's t0, taken at the dump
	Sockets []Socket
	Proxy   []ProxyBuffer
	// Skew is how many bytes the sockets moved between the sample's two
	// dumps: its uncertainty. Moved is each socket's part of it, by index
	// of Sockets (nil in samples spilled before it was kept): a
	// download's uncertainty is its own sockets' movement.
	Skew  int64
	Moved []int64
	// HasTemp says the proxy's temp files were measured: TempFile is
	// their summed size (Sampler.Temp) read just after the second dump,
	// and TempSkew how far it moved since just before the first.
	HasTemp  bool
	TempFile int64
	TempSkew int64
}

// Sampler takes Samples of the sockets on Ports. Dump defaults to DumpTCP
// of Ports; Proxy, when set, is the proxy's report, read around each dump.
type Sampler struct {
	Interval time.Duration
	// Ports are the listening ports of the stack's app and proxy: a
	// socket is kept when its local or remote port is one of them and it
	// is not listening.
	Ports []uint16
	// IPv6 dumps IPv6 sockets too (a stack listening on ::1).
	IPv6  bool
	Proxy func(ctx context.Context) ([]ProxyBuffer, error)
	// Temp, when set, measures the proxy's temp files from outside it
	// (TempFiles.Size), read just before the first dump and just after
	// the second.
	Temp func() (int64, error)
	Dump func() ([]Socket, error)
	// Sink, when set, gets each sample as it is taken instead of the
	// Sampling keeping it (a Spill's Put); its error counts as the
	// sample's.
	Sink func(Sample) error
}

// maxSkew is the movement during a sample (of any one socket, or of the
// proxy's own counts, or of its temp files) above which the sample is
// taken again (at most skewTries times, the least moved kept), so samples
// taken during a burst are not needlessly uncertain; so is one that moved
// as much as the smallest receive buffer of its sockets (the check judges
// a download's sample only when its sockets moved less than the client's
// receive buffer).
const (
	maxSkew   = 64 << 10
	skewTries = 3
)

// Sampling is a running Sampler.
type Sampling struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []Sample
	err     error
	errs    int
}

// Start samples from now until Stop, on a drift-free schedule from t0.
func (s *Sampler) Start(ctx context.Context, t0 time.Time) *Sampling {
	ctx, cancel := context.WithCancel(ctx)
	g := &Sampling{cancel: cancel, done: make(chan struct{})}
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	go func() {
		defer close(g.done)
		next := time.Now()
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			smp, err := s.Take(ctx, t0)
			kept := false
			if err == nil && s.Sink != nil {
				err, kept = s.Sink(smp), true
			}
			g.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					g.errs++
					if g.err == nil {
						g.err = err
					}
				}
			} else if !kept {
				g.samples = append(g.samples, smp)
			}
			g.mu.Unlock()
			for next = next.Add(interval); !next.After(time.Now()); next = next.Add(interval) {
			}
			timer.Reset(time.Until(next))
		}
	}()
	return g
}

// Take takes one Sample now: one dump finds the sockets on the ports,
// then each is looked up twice back to back (sockdiag.LookupPair), the
// proxy's report and its temp files' size read before and after the two
// passes, and a second dump finds the sockets the first missed. A dump
// is not one instant: the kernel walks its whole socket table (a
// millisecond even on an idle host), so a proxy that moves a burst from
// one socket to the other meanwhile is counted in both or neither; a lookup finds one socket in the table's hash instead, and two
// passes over a sample's few sockets take tens of microseconds. How far
// the sockets moved from the first pass to the second is the sample's
// Skew (a socket in one pass only counts its bytes; one closed since the
// dump is in neither); a sample that moved more than maxSkew, or as much
// as the smallest receive buffer among its sockets (below which the check
// judges it), is looked up again, at most skewTries times, and the least
// moved of the tries is kept.
func (s *Sampler) Take(ctx context.Context, t0 time.Time) (Sample, error) {
	dump := s.Dump
	if dump == nil {
		dump = func() ([]Socket, error) { return DumpTCP(s.Ports, s.IPv6) }
	}
	found, err := dump()
	if err != nil {
		return Sample{}, err
	}
	found = s.keep(found)
	if len(found) > sockdiag.MaxLookup {
		found = found[:sockdiag.MaxLookup]
	}
	target := int64(maxSkew)
	for _, so := range found {
		if so.RcvBuf > 0 {
			target = min(target, int64(so.RcvBuf))
		}
	}
	var best Sample
	bestSkew := int64(-1)
	for try := 0; try < skewTries && (bestSkew < 0 || bestSkew >= target); try++ {
		var smp Sample
		var before []ProxyBuffer
		if s.Proxy != nil {
			var err error
			if before, err = s.Proxy(ctx); err != nil {
				return Sample{}, err
			}
		}
		var tempBefore int64
		if s.Temp != nil {
			var err error
			if tempBefore, err = s.Temp(); err != nil {
				return Sample{}, err
			}
		}
		first, second, err := sockdiag.LookupPair(found, sockdiag.Filter{Info: true, MemInfo: true})
		if err != nil {
			return Sample{}, err
		}
		smp = Sample{T: time.Since(t0), Sockets: second}
		smp.Skew, smp.Moved = movement(first, second)
		if s.Temp != nil {
			if smp.TempFile, err = s.Temp(); err != nil {
				return Sample{}, err
			}
			smp.HasTemp, smp.TempSkew = true, abs(smp.TempFile-tempBefore)
		}
		if s.Proxy != nil {
			after, err := s.Proxy(ctx)
			if err != nil {
				return Sample{}, err
			}
			smp.Proxy = skewed(before, after)
		}
		if m := max(slices.Max(append([]int64{0}, smp.Moved...)), maxOf(smp.Proxy), smp.TempSkew); bestSkew < 0 || m < bestSkew {
			best, bestSkew = smp, m
		}
	}
	return s.addMissed(best, found, dump)
}

// addMissed adds to smp the sockets a second dump finds that found (the
// first dump's) lacks. A connection set up while the first dump walked
// the table can be missing from it, and so from the sample's passes,
// though it held bytes at the sample: it joins the sample as a socket in
// one pass only does, all its bytes its movement.
func (s *Sampler) addMissed(smp Sample, found []Socket, dump func() ([]Socket, error)) (Sample, error) {
	again, err := dump()
	if err != nil {
		return Sample{}, err
	}
	type pair struct{ l, r netip.AddrPort }
	known := make(map[pair]bool, len(found))
	for _, f := range found {
		known[pair{f.Local, f.Remote}] = true
	}
	for _, so := range s.keep(again) {
		if !known[pair{so.Local, so.Remote}] {
			m := written(so) + int64(so.BytesReceived)
			smp.Sockets = append(smp.Sockets, so)
			smp.Moved = append(smp.Moved, m)
			smp.Skew += m
		}
	}
	return smp, nil
}

// movement is how many bytes the sockets moved between two dumps: for
// each socket the largest change of any count a hop reads (bytes
// acknowledged, received, the send queue, its part not sent, the receive
// queue), and all the bytes of a socket in one dump only. Each count
// counts: a burst read between two sockets of one dump moves the sender's
// acknowledged count and send queue while its written total stays put.
// It returns the sum and each socket of b's part.
func movement(a, b []Socket) (int64, []int64) {
	type key struct{ l, r netip.AddrPort }
	at := make(map[key]Socket, len(a))
	for _, s := range a {
		at[key{s.Local, s.Remote}] = s
	}
	var m int64
	each := make([]int64, len(b))
	for i, s := range b {
		k := key{s.Local, s.Remote}
		o, ok := at[k]
		delete(at, k)
		if !ok {
			each[i] = written(s) + int64(s.BytesReceived)
			m += each[i]
			continue
		}
		each[i] = max(
			abs(int64(s.BytesAcked)-int64(o.BytesAcked)),
			abs(int64(s.BytesReceived)-int64(o.BytesReceived)),
			abs(int64(s.SendQ)-int64(o.SendQ)),
			abs(int64(s.NotSent)-int64(o.NotSent)),
			abs(int64(s.RecvQ)-int64(o.RecvQ)),
			abs(written(s)-written(o)),
		)
		m += each[i]
	}
	for _, o := range at {
		m += written(o) + int64(o.BytesReceived)
	}
	return m, each
}

// moved is socket so's movement during the sample, and false when the
// sample does not say (spilled before Moved was kept).
func (smp Sample) moved(so Socket) (int64, bool) {
	if len(smp.Moved) != len(smp.Sockets) {
		return 0, false
	}
	for i, s := range smp.Sockets {
		if s.Local == so.Local && s.Remote == so.Remote {
			return smp.Moved[i], true
		}
	}
	return 0, false
}

func written(s Socket) int64 { return int64(s.BytesAcked) + int64(s.SendQ) }

// keep returns the sockets on the sampler's ports, listeners left out.
func (s *Sampler) keep(all []Socket) []Socket {
	var out []Socket
	for _, so := range all {
		if so.State == sockdiag.Listen {
			continue
		}
		if slices.Contains(s.Ports, so.Local.Port()) || slices.Contains(s.Ports, so.Remote.Port()) {
			out = append(out, so)
		}
	}
	return out
}

// skewed is the after report with each response's movement since before,
// and the responses in before only: they ended after it, maybe after the
// dump, which can have seen the proxy still holding bytes of one, so
// what the proxy held then is not known (not nothing): before's entry,
// all its bytes its movement, as for a response in after only.
func skewed(before, after []ProxyBuffer) []ProxyBuffer {
	out := slices.Clone(after)
	for i := range out {
		j := slices.IndexFunc(before, func(b ProxyBuffer) bool { return b.Client == out[i].Client })
		if j < 0 {
			out[i].Skew = out[i].UpstreamRead + out[i].ClientWritten
			continue
		}
		out[i].Skew = abs(out[i].UpstreamRead-before[j].UpstreamRead) + abs(out[i].ClientWritten-before[j].ClientWritten)
	}
	for _, b := range before {
		if !slices.ContainsFunc(after, func(a ProxyBuffer) bool { return a.Client == b.Client }) {
			b.Skew = b.UpstreamRead + b.ClientWritten
			out = append(out, b)
		}
	}
	return out
}

func maxOf(p []ProxyBuffer) int64 {
	var m int64
	for _, b := range p {
		m = max(m, b.Skew)
	}
	return m
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Stop ends the sampling and returns its samples, in time order (none
// with a Sink), and the first error of any sample that failed (with how
// many did).
func (g *Sampling) Stop() ([]Sample, error) {
	g.cancel()
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.samples, &SampleError{Failed: g.errs, First: g.err}
	}
	return g.samples, nil
}

// SampleError says that some samples failed.
type SampleError struct {
	Failed int
	First  error
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("hop samples: %d failed, the first: %v", e.Failed, e.First)
}

func (e *SampleError) Unwrap() error { return e.First }
