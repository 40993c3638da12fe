package assess

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// Probe is a kind of slow client.
type Probe string

// The probes, in the order they run.
const (
	ProbeSlowReaders Probe = "slow-readers"    // paced reads of the large URL, small SO_RCVBUF
	ProbeSlowUploads Probe = "slow-uploads"    // paced writes of a POST body, small SO_SNDBUF
	ProbeIdle        Probe = "idle"            // connect, send nothing
	ProbeSlowloris   Probe = "slowloris"       // a header byte a second, never finished
	ProbeStalled     Probe = "stalled-readers" // read 64 KiB of the large URL, then nothing
	ProbeHeldStreams Probe = "held-streams"    // a long-poll or SSE request held open
	// The HTTP/2 probes, for a front that speaks HTTP/2 (see h2.go):
	// paced slow streams of the large URL, slow by flow control, each on
	// its own connection, or all on one.
	ProbeH2SlowStreams Probe = "h2-slow-streams"
	ProbeH2OneConn     Probe = "h2-streams-one-conn"
)

// Probes lists every probe in order.
var Probes = []Probe{ProbeSlowReaders, ProbeSlowUploads, ProbeIdle, ProbeSlowloris, ProbeStalled, ProbeHeldStreams,
	ProbeH2SlowStreams, ProbeH2OneConn}

// DefaultProbes are the probes run when none are chosen, on a front that
// speaks HTTP/1.1: every probe but the HTTP/2 ones. H2DefaultProbes are
// those on a front that speaks HTTP/2: the probes that go through it
// (idle sends no byte, so it speaks neither protocol).
var (
	DefaultProbes   = []Probe{ProbeSlowReaders, ProbeSlowUploads, ProbeIdle, ProbeSlowloris, ProbeStalled, ProbeHeldStreams}
	H2DefaultProbes = []Probe{ProbeIdle, ProbeH2SlowStreams, ProbeH2OneConn}
)

// http2 reports whether the probe's clients speak HTTP/2.
func (p Probe) http2() bool { return p == ProbeH2SlowStreams || p == ProbeH2OneConn }

// speaks reports whether the probe's clients can go through a front that
// speaks HTTP/2 (h2) or HTTP/1.1 (!h2): idle sends nothing, so both.
func (p Probe) speaks(h2 bool) bool { return p == ProbeIdle || p.http2() == h2 }

// StallAfter is what a stalled reader reads before it stops reading.
const StallAfter = 64 << 10

// ParseProbe parses a probe's name.
func ParseProbe(s string) (Probe, error) {
	if p := Probe(s); slices.Contains(Probes, p) {
		return p, nil
	}
	return "", fmt.Errorf("unknown probe %q", s)
}

// names joins probes' names with commas.
func names(probes []Probe) string { return strings.Join(strs(probes), ", ") }

// strs is probes' names.
func strs(probes []Probe) []string {
	out := make([]string, len(probes))
	for i, p := range probes {
		out[i] = string(p)
	}
	return out
}

// target is the kind of request the probe's clients send ("" for the
// connection probes, which go to the fast URL's host and port).
func (p Probe) target() stack.Target {
	switch p {
	case ProbeSlowReaders, ProbeStalled, ProbeH2SlowStreams, ProbeH2OneConn:
		return stack.TargetLarge
	case ProbeSlowUploads:
		return stack.TargetUpload
	case ProbeHeldStreams:
		return stack.TargetStream
	}
	return ""
}

// holds reports whether the probe's clients are connections the
// holders keep (idle, slowloris), not requests.
func (p Probe) holds() bool { return p == ProbeIdle || p == ProbeSlowloris }

// keeps reports whether the probe's last level (or the one that
// degraded) keeps its clients until the server ends them, or IdleMax, to
// see whether and when it does: the connection probes' and the stalled
// readers'.
func (p Probe) keeps() bool { return p.holds() || p == ProbeStalled }

// targets are where one probe's clients go.
type targets struct {
	fast       string
	front      string // the fast URL's host:port
	large      *url.URL
	largeSize  int64 // measured by the preflight
	upload     *url.URL
	uploadSize int64
	stream     *url.URL
	// streamCheck is closed when the stream URL's check request ended.
	streamCheck <-chan struct{}
	allowRemote bool
	// h2 is the front that speaks HTTP/2 (an HTTP/2 route, or an
	// external stack given --http2): /fast goes over it; nil for HTTP/1.1.
	h2 *h2Front
	// h2large is the large URL's front, where the HTTP/2 probes' streams go.
	h2large *h2Front
}

// streamChecked waits until the stream URL's check request ended (it
// holds what it holds until then), bound passed or ctx ended.
func (t targets) streamChecked(ctx context.Context, bound time.Duration) {
	if t.streamCheck == nil {
		return
	}
	select {
	case <-t.streamCheck:
	case <-time.After(bound):
	case <-ctx.Done():
	}
}

// crowd is one level's clients, running until their context ends (or
// their own bound).
type crowd struct {
	n       int
	inPlace chan struct{} // closed once every client connected or ended
	done    chan struct{} // closed once every client ended
	// anyEnded is closed once the first client ended.
	anyEnded chan struct{}
	started  time.Time // when the clients were started
	mu       sync.Mutex
	placed   int
	// live is how many clients are connected and not yet ended.
	live   int
	ends   map[string]int  // how the clients ended
	held   []time.Duration // how long each connection was held (idle, slowloris, stalled readers)
	firsts map[string]int  // the first response lines the server sent them
}

// place counts a client in place (connected, or ended before).
func (c *crowd) place() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.placed++
	if c.placed == c.n {
		close(c.inPlace)
	}
}

// connect counts a client connected: in place until it ends.
func (c *crowd) connect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live++
}

// end counts a client ended; connected says whether it had connected.
func (c *crowd) end(how string, connected bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ends) == 0 {
		close(c.anyEnded)
	}
	c.ends[how]++
	if connected {
		c.live--
	}
}

// inPlaceNow is how many clients are connected and not ended.
func (c *crowd) inPlaceNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// start runs n clients of probe p against t until ctx ends; hold is how
// long a client keeps the server busy at most (a reader's download is
// paced to last twice that; the connection probes' bound).
func (p Probe) start(ctx context.Context, t targets, n int, hold time.Duration) *crowd {
	c := &crowd{n: n, started: time.Now(), inPlace: make(chan struct{}), done: make(chan struct{}), anyEnded: make(chan struct{}),
		ends: map[string]int{}, firsts: map[string]int{}}
	if n == 0 { // a shard's share of a level smaller than the shards
		close(c.inPlace)
		close(c.done)
		return c
	}
	if p.holds() {
		go p.hold(ctx, t, n, hold, c)
		return c
	}
	if p.http2() {
		go p.startH2(ctx, t, n, hold, c)
		return c
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { p.client(ctx, t, i, hold, c) })
	}
	go func() {
		wg.Wait()
		close(c.done)
	}()
	return c
}

// paced is the rate (bytes a second) that moves size bytes in twice
// hold: a client keeps the server busy through the level.
func paced(size int64, hold time.Duration) float64 { return max(float64(size)/(2*hold.Seconds()), 1) }

// client runs one client of a request probe.
func (p Probe) client(ctx context.Context, t targets, i int, hold time.Duration, c *crowd) {
	var once sync.Once
	placed := func() { once.Do(c.place) }
	defer placed()
	var connected atomic.Bool
	onConnect := func() {
		if connected.CompareAndSwap(false, true) {
			c.connect()
			placed()
		}
	}
	end := func(how string) { c.end(how, connected.Load()) }
	switch p {
	case ProbeSlowReaders, ProbeStalled:
		r := loadgen.SlowReader{URL: t.large, RcvBuf: loadgen.DefaultSlowRcvBuf, ReadSize: loadgen.DefaultSlowReadSize,
			Rate: paced(t.largeSize, hold), Timeout: 4 * hold, AllowRemote: t.allowRemote,
			OnConnect: func(int, netip.AddrPort) { onConnect() }}
		if p == ProbeStalled {
			p.stall(ctx, r, i, hold, c, end)
			return
		}
		d := r.Run(ctx, i)
		end(readEnd(d))
	case ProbeSlowUploads:
		u := loadgen.SlowUploader{URL: t.upload, Size: t.uploadSize, Rate: paced(t.uploadSize, hold),
			SndBuf: loadgen.DefaultUploadSndBuf, WriteSize: loadgen.DefaultUploadWriteSize, Timeout: 4 * hold, AllowRemote: t.allowRemote,
			OnConnect: func(int) { onConnect() }}
		got := u.Run(ctx, i)
		end(got.Outcome)
	case ProbeHeldStreams:
		client := loadgen.NewClient(loadgen.ClientOptions{Timeout: 4 * hold, AllowRemote: t.allowRemote})
		defer client.Close()
		var r loadgen.Result
		client.Get(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { onConnect() }}), streamFor(t.stream, hold), &r)
		how := fmt.Sprintf("status %d", r.Status)
		if r.Err != nil {
			how = loadgen.ErrorReason(r.Err)
		}
		end(how)
	}
}

// streamFor is the stream URL asking the server to hold its response for
// hold, whole seconds up (wait=): a server that does not see its client
// leave (a sync worker asleep in a long-poll) is held that long whatever
// the client does, so the level after this one waits for it.
func streamFor(u *url.URL, hold time.Duration) string {
	v := *u
	q := v.Query()
	q.Set("wait", streamWait(hold).String())
	v.RawQuery = q.Encode()
	return v.String()
}

// streamWait is the wait a held stream asks for at a level held for hold.
func streamWait(hold time.Duration) time.Duration {
	return (hold + time.Second - 1).Truncate(time.Second)
}

// stall runs stalled reader i (r): it reads StallAfter, then nothing,
// until the server ends its connection, the level ends (ctx) or hold
// passes ("bound"), and counts how long it held the connection.
func (p Probe) stall(ctx context.Context, r loadgen.SlowReader, i int, hold time.Duration, c *crowd, end func(string)) {
	r.Rate, r.Stall, r.StallAfter = 64<<20, 2*hold, StallAfter
	bctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	d := r.Run(bctx, i)
	how := readEnd(d)
	if ctx.Err() == nil && bctx.Err() != nil {
		how = string(loadgen.EndBound)
	}
	end(how)
	if !d.Start.IsZero() {
		c.mu.Lock()
		c.held = append(c.held, time.Since(d.Start))
		c.mu.Unlock()
	}
}

// readEnd is how a download ended (endOf).
func readEnd(d loadgen.Download) string { return endOf(d.Complete, d.Err, d.Status) }

// endOf is how a download or a stream ended: complete, the error's
// reason, its status when not 200, else incomplete.
func endOf(complete bool, err error, status int) string {
	switch {
	case complete:
		return "complete"
	case err != nil:
		return loadgen.ErrorReason(err)
	case status != http.StatusOK:
		return fmt.Sprintf("status %d", status)
	}
	return "incomplete"
}

// hold runs n idle or slowloris connections to the front, each kept at
// most hold.
func (p Probe) hold(ctx context.Context, t targets, n int, hold time.Duration, c *crowd) {
	defer close(c.done)
	mode := loadgen.HoldIdle
	if p == ProbeSlowloris {
		mode = loadgen.HoldSlowloris
	}
	h := loadgen.IdleHolders{Addr: t.front, Mode: mode, N: n, Hold: hold, AllowRemote: t.allowRemote,
		OnConnect: func(int) { c.connect() }, OnEnd: func(int) { c.mu.Lock(); c.live--; c.mu.Unlock() },
		OnConnected: func(int) { close(c.inPlace) }}
	out, err := h.Run(ctx)
	if err != nil {
		c.end("error", false)
		select {
		case <-c.inPlace:
		default:
			close(c.inPlace)
		}
		return
	}
	for _, o := range out {
		c.end(string(o.End), false) // OnEnd counted it out
		c.mu.Lock()
		if o.End != loadgen.EndConnectError {
			c.held = append(c.held, o.Held)
		}
		if o.FirstLine != "" {
			c.firsts[o.FirstLine]++
		}
		c.mu.Unlock()
	}
}
