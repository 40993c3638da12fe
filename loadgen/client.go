package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"
)

// DefaultTimeout bounds one request, from start to last body byte.
const DefaultTimeout = 30 * time.Second

// ErrIncomplete is a response body shorter than its Content-Length.
var ErrIncomplete = errors.New("response body incomplete")

// ErrNotSent is the error of an open-loop request that was never sent: the
// run was stopped before the request was due.
var ErrNotSent = errors.New("not_sent: the run was stopped before the request was due")

// Result is one request as the client saw it. Times are absolute; callers
// make them relative to their run start.
type Result struct {
	Seq         int
	Worker      int       // closed-loop worker or holder that sent it
	Scheduled   bool      // part of an open-loop schedule
	ScheduledAt time.Time // when it was due (open loop only)
	Start       time.Time // when it actually started
	ScheduleLag time.Duration
	NewConn     bool // a TCP connection was opened for it
	// Proto is the protocol the request was sent in, ProtoHTTP1 or
	// ProtoHTTP2; empty when it was never sent.
	Proto string
	// Conn is the client's end of the TCP connection the request went on
	// (its local address and port: what the server's socket table and
	// access log show as the peer); zero when no connection was had.
	Conn netip.AddrPort
	// Stream is the request's HTTP/2 stream ID; 0 over HTTP/1.1.
	Stream       uint32
	Connect      time.Duration
	TTFB         time.Duration // start to first response byte
	Latency      time.Duration // start to last body byte (or to the error)
	Status       int           // 0 when no response arrived
	Bytes        int64         // body bytes received
	ServerTiming time.Duration // the server's app;dur, 0 when absent
	// ServerTimingTrailer is the server's app;dur sent as a trailer after
	// the body (its time through the last byte written), 0 when absent.
	ServerTimingTrailer time.Duration
	// TCPMinRTT is the connection's minimum RTT (TCP_INFO), with
	// ClientOptions.TCPInfo; 0 otherwise.
	TCPMinRTT time.Duration
	// TLSHandshake is how long the TLS handshake of a new connection took
	// (httptrace TLSHandshakeStart to TLSHandshakeDone), 0 without one;
	// TLSVersion its version (tls.VersionTLS13, ...) and TLSResumed
	// whether it resumed an earlier session.
	TLSHandshake time.Duration
	TLSVersion   uint16
	TLSResumed   bool
	Err          error
	// NotSent marks an open-loop request whose schedule was stopped before
	// it was due: Start is zero, nothing was measured and Err is ErrNotSent.
	NotSent bool
	// Skipped marks an open-loop request not started because it could not
	// start within OpenLoop.MaxLag of its schedule: Start is zero,
	// ScheduleLag is how late it was then and Err wraps ErrLate.
	Skipped bool
	// TraceID is the trace of the request's span when that span was
	// sampled, else zero; histogram observations carry it as an exemplar.
	TraceID trace.TraceID
}

// ClientOptions configures a Client.
type ClientOptions struct {
	KeepAlive bool          // reuse connections; false opens one per request
	Timeout   time.Duration // per request; DefaultTimeout when 0
	RcvBuf    int           // SO_RCVBUF set before connect; 0 leaves the kernel default
	Header    http.Header   // added to every request
	// TracerProvider, when set, gives every request a client span (HTTP
	// semantic conventions, connection phases as events) and a W3C
	// traceparent header. Nil turns tracing off at no cost.
	TracerProvider trace.TracerProvider
	// AllowRemote lets the client connect to addresses that are not
	// loopback. Without it every connection is checked after name
	// resolution, just before connect, and refused (an error wrapping
	// ErrNotLoopback) unless its address is in 127.0.0.0/8 or ::1.
	AllowRemote bool
	// DialContext, when set, replaces the client's dialer (and with it the
	// loopback check above and RcvBuf): the caller is then responsible for
	// where it connects. The lab sets it to dial inside the network
	// namespaces it created.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// TCPInfo has every result carry its connection's minimum round-trip
	// time as the kernel measured it (Result.TCPMinRTT), at the cost of a
	// getsockopt per request.
	TCPInfo bool
	// Lean sends plain-http GETs to an IP-literal host (http://127.0.0.1:
	// PORT/...) with the client's own minimal HTTP/1.1 (see lean.go)
	// instead of net/http, for a fraction of its CPU and allocations: what
	// `slowlab loadgen` uses to reach high rates. Results, errors and
	// metrics are the same. Requests it does not handle (https, a host
	// name, a Host header, or any request when TracerProvider is set) go
	// through net/http.
	Lean bool
	// TLS configures https:// requests (nil: the standard defaults). Give
	// it a ClientSessionCache to resume sessions on new connections.
	TLS *tls.Config
}

// Client sends GET requests and times their phases with httptrace.
type Client struct {
	hc     *http.Client
	opts   ClientOptions
	tracer *tracer // nil: no spans
	lean   *lean   // nil: net/http only
}

// NewClient returns a Client. Close it to release idle connections.
func NewClient(o ClientOptions) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	dial := o.DialContext
	if dial == nil {
		d := &net.Dialer{Timeout: o.Timeout, Control: chainControl(dialGuard(o.AllowRemote), rcvBufControl(o.RcvBuf))}
		dial = d.DialContext
	}
	tr := &http.Transport{
		DialContext:         dial,
		DisableKeepAlives:   !o.KeepAlive,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSClientConfig:     o.TLS,
		// lean's bound too, where net/http's default is 10 MiB
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	c := &Client{hc: &http.Client{Transport: tr, CheckRedirect: noRedirect}, opts: o, tracer: newTracer(o.TracerProvider)}
	if o.Lean && c.tracer == nil {
		c.lean = newLean(dial, o)
	}
	return c
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close drops idle keep-alive connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
	if c.lean != nil {
		c.lean.close()
	}
}

// Get performs one GET of url and fills r's timings, status, bytes and error.
// r.Start is set here if the caller left it zero.
func (c *Client) Get(ctx context.Context, url string, r *Result) {
	c.get(ctx, url, r, nil)
}

// get is Get with the span attributes of the caller's loop (nil: derived
// from url).
func (c *Client) get(ctx context.Context, url string, r *Result, attrs []attribute.KeyValue) {
	if r.Start.IsZero() {
		r.Start = time.Now()
	}
	if c.lean != nil {
		if t := c.lean.target(url); t != nil {
			c.lean.do(ctx, t, r.Start.Add(c.opts.Timeout), r)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var rt *reqTrace
	if c.tracer != nil {
		rt = c.tracer.begin(ctx, url, r, attrs)
		ctx = rt.withHooks(rt.ctx)
	}
	c.do(ctx, url, r, rt)
	rt.end(r)
}

func (c *Client) do(ctx context.Context, url string, r *Result, rt *reqTrace) {
	// The hooks may run on the dialer's goroutine, which can outlive a
	// cancelled request: they write phases under mu, copied into r at the
	// end, so a late hook never races the caller reading r.
	ph := phases{tcpInfo: c.opts.TCPInfo}
	hooks := ph.hooks(r.Start)
	defer ph.into(r)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, hooks), http.MethodGet, url, nil)
	if err != nil {
		r.Err = err
		r.Latency = time.Since(r.Start)
		return
	}
	for k, v := range c.opts.Header {
		req.Header[k] = v
	}
	rt.inject(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		r.Err = err
		rt.bodyDone(err, ph.ttfb() > 0)
		r.Latency = time.Since(r.Start)
		return
	}
	r.Status = resp.StatusCode
	if st := resp.Header.Get("Server-Timing"); st != "" {
		r.ServerTiming, _ = ParseServerTiming(st, "app")
	}
	r.Bytes, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.Latency = time.Since(r.Start)
	// A trailer is complete only once the body was read to its end.
	if st := resp.Trailer.Get("Server-Timing"); st != "" {
		r.ServerTimingTrailer, _ = ParseServerTiming(st, "app")
	}
	r.Err = checkLength(err, r.Bytes, resp.ContentLength)
	rt.bodyDone(r.Err, true)
}

// phases are a request's connection phases as the httptrace hooks see them.
type phases struct {
	tcpInfo      bool // read the connection's RTT at the first response byte
	mu           sync.Mutex
	connectStart time.Time
	connect      time.Duration
	newConn      bool
	ttfbAt       time.Duration
	conn         net.Conn
	minRTTAt     time.Duration
	tlsStart     time.Time
	tlsTook      time.Duration
	tlsVersion   uint16
	tlsResumed   bool
}

func (p *phases) hooks(start time.Time) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		ConnectStart: func(_, _ string) { p.mu.Lock(); p.connectStart = time.Now(); p.mu.Unlock() },
		ConnectDone: func(_, _ string, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if err == nil && !p.connectStart.IsZero() {
				p.connect = time.Since(p.connectStart)
			}
		},
		TLSHandshakeStart: func() { p.mu.Lock(); p.tlsStart = time.Now(); p.mu.Unlock() },
		TLSHandshakeDone: func(cs tls.ConnectionState, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if err == nil && !p.tlsStart.IsZero() {
				p.tlsTook, p.tlsVersion, p.tlsResumed = time.Since(p.tlsStart), cs.Version, cs.DidResume
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			p.mu.Lock()
			p.newConn, p.conn = !info.Reused, info.Conn
			p.mu.Unlock()
		},
		GotFirstResponseByte: func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.ttfbAt = time.Since(start)
			if p.tcpInfo {
				// Now, while the connection is surely open: without
				// keep-alive it is closed once the body is read.
				p.minRTTAt = minRTT(p.conn)
			}
		},
	}
}

func (p *phases) ttfb() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ttfbAt
}

// into copies the phases into r.
func (p *phases) into(r *Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.Connect, r.NewConn, r.TTFB, r.TCPMinRTT = p.connect, p.newConn, p.ttfbAt, p.minRTTAt
	r.Proto = ProtoHTTP1
	if p.conn != nil {
		r.Conn = localAddrPort(p.conn)
	}
	r.TLSHandshake, r.TLSVersion, r.TLSResumed = p.tlsTook, p.tlsVersion, p.tlsResumed
}

// minRTT is the kernel's minimum round-trip time of a TCP connection
// (TCP_INFO tcpi_min_rtt, else tcpi_rtt), 0 when it cannot be read.
func minRTT(conn net.Conn) time.Duration {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var info *unix.TCPInfo
	raw.Control(func(fd uintptr) { info, _ = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if info == nil {
		return 0
	}
	if info.Min_rtt > 0 {
		return time.Duration(info.Min_rtt) * time.Microsecond
	}
	return time.Duration(info.Rtt) * time.Microsecond
}

// checkLength turns a body shorter than its Content-Length (which net/http
// reports as io.ErrUnexpectedEOF, or not at all) into ErrIncomplete.
func checkLength(err error, got, want int64) error {
	if want < 0 || got == want || err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	return fmt.Errorf("%w: %d of %d bytes", ErrIncomplete, got, want)
}

// rcvBufControl sets SO_RCVBUF before connect, so the window the client
// advertises in its SYN is already small (setting it later does not shrink it).
func rcvBufControl(size int) func(network, address string, c syscall.RawConn) error {
	return bufControl(unix.SO_RCVBUF, "SO_RCVBUF", size)
}

// bufControl sets the socket buffer option opt (named name) to size
// before connect; nil for a size of 0 or less (the kernel's default).
func bufControl(opt int, name string, size int) func(network, address string, c syscall.RawConn) error {
	if size <= 0 {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, size)
		}); err != nil {
			return err
		}
		if serr != nil {
			return os.NewSyscallError("setsockopt "+name, serr)
		}
		return nil
	}
}
