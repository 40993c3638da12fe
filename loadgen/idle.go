package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/slowlab/slowlab/internal/loopback"
)

// HoldMode is what an IdleHolders connection sends.
type HoldMode string

// Hold modes: idle connects and sends nothing; slowloris sends a request
// header one byte per ByteEvery and never finishes it (a header line, then
// one more header line after another).
const (
	HoldIdle      HoldMode = "idle"
	HoldSlowloris HoldMode = "slowloris"
)

// HoldModes lists the valid modes.
var HoldModes = []HoldMode{HoldIdle, HoldSlowloris}

// HoldEnd is how a held connection ended.
type HoldEnd string

// How a held connection ends: the server closed it (FIN, after a response
// or none: Received says), reset it, or it lasted until the holder's bound
// and the holder closed it; or it never connected, or the run was
// cancelled, or another error ended it (in Err).
const (
	EndFIN          HoldEnd = "fin"
	EndReset        HoldEnd = "reset"
	EndBound        HoldEnd = "bound"
	EndConnectError HoldEnd = "connect-error"
	EndCanceled     HoldEnd = "canceled"
	EndError        HoldEnd = "error"
)

// Limits of IdleHolders.
const (
	MaxHeldConns = 10000
	MaxHold      = time.Hour
	// DefaultByteEvery is a slowloris client's pace: a byte a second.
	DefaultByteEvery = time.Second
	// DefaultDialers bounds the connects in flight: 10,000 at once would
	// overflow the server's SYN and accept queues before it had a chance
	// to accept, which measures the ramp instead of the holding.
	DefaultDialers = 64
)

// IdleHolders opens N connections to Addr, each from the next of Sources,
// that send nothing (HoldIdle) or a never-ending header (HoldSlowloris),
// and records how long the server kept each open and how it ended. Every
// connection is closed by the holder at the latest Hold after it
// connected, so Run ends within the connects' time plus Hold.
type IdleHolders struct {
	Addr    string       // IP:PORT on loopback; HOST:PORT anywhere with AllowRemote
	Mode    HoldMode     // idle or slowloris
	N       int          // connections, up to MaxHeldConns
	Sources []netip.Addr // local addresses, used in turn (127.0.0.2, ...); empty: the kernel's choice
	Hold    time.Duration
	// ByteEvery is the slowloris pace; 0: DefaultByteEvery.
	ByteEvery time.Duration
	// ConnectTimeout bounds each connect; 0: Hold.
	ConnectTimeout time.Duration
	// Dialers bounds the connects in flight; 0: DefaultDialers.
	Dialers int
	// OnConnected, when set, is called once every connection has been
	// tried (connected or failed), with the number connected.
	OnConnected func(connected int)
	// OnConnect and OnEnd, when set, are called as each connection is
	// made and as each made one ends, with its Seq.
	OnConnect, OnEnd func(seq int)
	// AllowRemote lets Addr be another host (a name or an address); without
	// it only loopback, checked again at connect as the clients do.
	AllowRemote bool
}

// HeldConn is one held connection's outcome.
type HeldConn struct {
	Seq       int
	Source    string        // local address:port
	Start     time.Time     // connect started
	Connect   time.Duration // connect time
	Held      time.Duration // connected until the end
	End       HoldEnd
	Sent      int // header bytes sent (slowloris)
	Received  int // bytes the server sent (a 408, say)
	FirstLine string
	Err       error // the connect's or the unexpected error
}

// Validate names the first invalid field.
func (h *IdleHolders) Validate() error {
	ap, err := netip.ParseAddrPort(h.Addr)
	host, port, splitErr := net.SplitHostPort(h.Addr)
	switch {
	case h.AllowRemote && (splitErr != nil || host == "" || port == ""):
		return fmt.Errorf("addr %q: want HOST:PORT", h.Addr)
	case h.AllowRemote:
	case err != nil:
		return fmt.Errorf("addr %q: want IP:PORT", h.Addr)
	case !loopback.Addr(ap.Addr()):
		return fmt.Errorf("addr %q: must be in %s (another host needs AllowRemote: --allow-remote)", h.Addr, loopback.Ranges)
	}
	switch {
	case h.Mode != HoldIdle && h.Mode != HoldSlowloris:
		return fmt.Errorf("mode %q: allowed %v", h.Mode, HoldModes)
	case h.N < 0 || h.N > MaxHeldConns:
		return fmt.Errorf("connections %d: allowed 0 to %d", h.N, MaxHeldConns)
	case h.Hold <= 0 || h.Hold > MaxHold:
		return fmt.Errorf("hold %v: allowed more than 0 up to %v", h.Hold, MaxHold)
	case h.ByteEvery < 0 || h.ByteEvery > h.Hold:
		return fmt.Errorf("byte every %v: allowed 0 (%v) up to the hold, %v", h.ByteEvery, DefaultByteEvery, h.Hold)
	case h.ConnectTimeout < 0 || h.ConnectTimeout > MaxHold:
		return fmt.Errorf("connect timeout %v: allowed 0 (the hold) up to %v", h.ConnectTimeout, MaxHold)
	case h.Dialers < 0:
		return fmt.Errorf("dialers %d: must be 0 (%d) or more", h.Dialers, DefaultDialers)
	}
	for i, s := range h.Sources {
		if !s.Is4() || !loopback.Addr(s) {
			return fmt.Errorf("sources[%d] %v: must be an IPv4 address in 127.0.0.0/8", i, s)
		}
	}
	return nil
}

// slowlorisHead starts the header a slowloris connection sends; after it,
// slowlorisLine forever.
const (
	slowlorisHead = "GET /fast HTTP/1.1\r\nHost: slowlab\r\n"
	slowlorisLine = "X-Slowloris: a\r\n"
)

// Run holds the connections and returns one outcome per connection, in
// Seq order. Cancelling ctx closes every connection (EndCanceled).
func (h *IdleHolders) Run(ctx context.Context) ([]HeldConn, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	dialers := h.Dialers
	if dialers == 0 {
		dialers = DefaultDialers
	}
	out := make([]HeldConn, h.N)
	var wg sync.WaitGroup
	var dialWG sync.WaitGroup
	sem := make(chan struct{}, dialers)
	var mu sync.Mutex
	connected := 0
	for i := range h.N {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			for j := i; j < h.N; j++ {
				out[j] = HeldConn{Seq: j, End: EndCanceled, Err: ctx.Err()}
			}
			wg.Wait()
			return out, ctx.Err()
		}
		wg.Add(1)
		dialWG.Add(1)
		go func() {
			defer wg.Done()
			c, r := h.dial(ctx, i)
			<-sem
			if c != nil {
				mu.Lock()
				connected++
				mu.Unlock()
				if h.OnConnect != nil {
					h.OnConnect(i)
				}
			}
			dialWG.Done()
			if c == nil {
				out[i] = r
				return
			}
			// Hold on a fresh goroutine: the dial's deep stack would stay
			// with this one (8 KiB a connection instead of 2).
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.hold(ctx, c, &r)
				out[i] = r
				if h.OnEnd != nil {
					h.OnEnd(i)
				}
			}()
		}()
	}
	dialWG.Wait()
	if h.OnConnected != nil {
		h.OnConnected(connected)
	}
	wg.Wait()
	return out, nil
}

func (h *IdleHolders) dial(ctx context.Context, i int) (net.Conn, HeldConn) {
	r := HeldConn{Seq: i, Start: time.Now()}
	timeout := h.ConnectTimeout
	if timeout == 0 {
		timeout = h.Hold
	}
	d := net.Dialer{Timeout: timeout, Control: dialGuard(h.AllowRemote)}
	network := "tcp4"
	if len(h.Sources) > 0 {
		d.LocalAddr = &net.TCPAddr{IP: h.Sources[i%len(h.Sources)].AsSlice()}
	} else if h.AllowRemote {
		network = "tcp" // a name may resolve to IPv6 only
	}
	c, err := d.DialContext(ctx, network, h.Addr)
	r.Connect = time.Since(r.Start)
	if err != nil {
		r.End, r.Err = EndConnectError, err
		if ctx.Err() != nil {
			r.End = EndCanceled
		}
		return nil, r
	}
	r.Source = c.LocalAddr().String()
	return c, r
}

// hold keeps c until the server ends it, the bound passes or ctx ends.
func (h *IdleHolders) hold(ctx context.Context, c net.Conn, r *HeldConn) {
	connected := time.Now()
	bound := connected.Add(h.Hold)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	defer c.Close()
	every := h.ByteEvery
	if every == 0 {
		every = DefaultByteEvery
	}
	next := connected
	buf := make([]byte, 512)
	var first []byte
	for {
		if h.Mode == HoldSlowloris && !time.Now().Before(next) {
			b := slowlorisByte(r.Sent)
			if _, err := c.Write([]byte{b}); err != nil {
				r.End, r.Err = classify(err)
				break
			}
			r.Sent++
			next = next.Add(every)
		}
		deadline := bound
		if h.Mode == HoldSlowloris && next.Before(deadline) {
			deadline = next
		}
		c.SetReadDeadline(deadline)
		n, err := c.Read(buf)
		if n > 0 {
			r.Received += n
			if len(first) < 200 {
				first = append(first, buf[:min(n, 200-len(first))]...)
			}
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			r.End, r.Err = EndCanceled, ctx.Err()
			break
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if !time.Now().Before(bound) {
				r.End = EndBound
				break
			}
			continue
		}
		r.End, r.Err = classify(err)
		break
	}
	r.Held = time.Since(connected)
	r.FirstLine = firstLine(first)
}

// slowlorisByte is the header's byte at offset n.
func slowlorisByte(n int) byte {
	if n < len(slowlorisHead) {
		return slowlorisHead[n]
	}
	n -= len(slowlorisHead)
	return slowlorisLine[n%len(slowlorisLine)]
}

// classify maps how a read or write failed to how the connection ended:
// EOF is the server's FIN, a reset its RST, a broken pipe a write after its
// FIN; anything else is an error kept in Err.
func classify(err error) (HoldEnd, error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE):
		return EndFIN, nil
	case errors.Is(err, syscall.ECONNRESET):
		return EndReset, nil
	}
	return EndError, err
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\r' || c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}
