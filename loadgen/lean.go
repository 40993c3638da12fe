package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"sync"
	"time"
)

// lean is a Client's minimal HTTP/1.1 GET for plain-http URLs whose host is
// an IP literal, used with ClientOptions.Lean when the client does not
// trace. net/http runs two goroutines per connection (a read loop and a
// write loop), a dial goroutine, and allocates a Request, a Response and
// header maps per request; lean does one request on the calling goroutine,
// writes a request line and headers prepared once per URL, and reads the
// status line, the few headers it needs (Content-Length, Transfer-Encoding,
// Connection, Server-Timing) and the body (length-delimited, chunked with
// its trailers, or to EOF) from a pooled buffer; a header that is not the
// common case is parsed by net/http's own ReadResponse from the same
// buffer (lean_head.go), so the results are net/http's. It measures what the
// net/http path does, the same way: connect (the dial of the literal
// address), first response byte, last body byte, the connection's RTT.
type lean struct {
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	ownDial   bool // dial is the client's net.Dialer, which has the request timeout
	keepAlive bool
	tcpInfo   bool
	header    http.Header

	targets sync.Map // URL -> *leanTarget, nil when lean does not handle it
	idle    sync.Map // address -> chan *leanConn, the idle keep-alive connections
}

// leanTarget is one URL: where to connect and the request to send there,
// and the idle keep-alive connections to that address.
type leanTarget struct {
	url  string
	addr string
	req  []byte
	get  *http.Request // what net/http's ReadResponse is told was sent
	idle chan *leanConn
}

// leanConn is a connection with its read buffer, which may hold the start
// of the next response. The buffer reads through Read.
type leanConn struct {
	net.Conn
	br *bufio.Reader
	// pending is a read error that a look ahead took from the buffer,
	// handed to its next read.
	pending error
	// headerLeft is how many more bytes a response header may read from
	// the connection (net/http's readLimit): MaxResponseHeaderBytes from
	// the wait for its first byte, across its 1xx responses, to its end;
	// -1 while no header is read.
	headerLeft int64
}

func (c *leanConn) Read(p []byte) (int, error) {
	if err := c.pending; err != nil {
		c.pending = nil
		return 0, err
	}
	if c.headerLeft < 0 {
		return c.Conn.Read(p)
	}
	if c.headerLeft == 0 {
		return 0, ErrHeaderTooLarge
	}
	if int64(len(p)) > c.headerLeft {
		p = p[:c.headerLeft]
	}
	n, err := c.Conn.Read(p)
	c.headerLeft -= int64(n)
	return n, err
}

// leanIdle is how many idle keep-alive connections a target keeps (the
// net/http path's MaxIdleConnsPerHost).
const leanIdle = 1024

var leanReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

func newLean(dial func(ctx context.Context, network, addr string) (net.Conn, error), o ClientOptions) *lean {
	return &lean{dial: dial, ownDial: o.DialContext == nil, keepAlive: o.KeepAlive, tcpInfo: o.TCPInfo, header: o.Header}
}

// target returns the prepared target of raw, or nil when lean does not
// handle it (not http, a host name, or a Host header of the caller's).
func (l *lean) target(raw string) *leanTarget {
	if t, ok := l.targets.Load(raw); ok {
		return t.(*leanTarget)
	}
	t, _ := l.targets.LoadOrStore(raw, l.prepare(raw)) // nil too: decided once per URL
	return t.(*leanTarget)
}

func (l *lean) prepare(raw string) *leanTarget {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || l.header.Get("Host") != "" {
		return nil
	}
	if _, err := netip.ParseAddr(u.Hostname()); err != nil {
		return nil // a name: net/http resolves it and times the connect after resolution
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	var b bytes.Buffer
	b.WriteString("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: Go-http-client/1.1\r\n")
	for k, vs := range l.header {
		for _, v := range vs {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	if !l.keepAlive {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	addr := net.JoinHostPort(u.Hostname(), port)
	idle, _ := l.idle.LoadOrStore(addr, make(chan *leanConn, leanIdle))
	get := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}
	return &leanTarget{url: raw, addr: addr, req: b.Bytes(), get: get, idle: idle.(chan *leanConn)}
}

// close closes the idle connections.
func (l *lean) close() {
	l.idle.Range(func(_, v any) bool {
		for idle := v.(chan *leanConn); len(idle) > 0; {
			c := <-idle
			c.Close()
			c.br.Reset(nil)
			leanReaders.Put(c.br)
		}
		return true
	})
}

// errLeanRetry is a reused connection that failed before any byte of the
// response came: the server closed it while idle, so the request is sent
// again on a new connection, as net/http does.
var errLeanRetry = errors.New("idle connection closed by the server")

// do performs one GET of t, within deadline and ctx, and fills r.
func (l *lean) do(ctx context.Context, t *leanTarget, deadline time.Time, r *Result) {
	r.Proto = ProtoHTTP1
	err := l.roundTrip(ctx, t, deadline, r, true)
	if errors.Is(err, errLeanRetry) {
		err = l.roundTrip(ctx, t, deadline, r, false)
	}
	r.Latency = time.Since(r.Start)
	if err != nil && r.Err == nil {
		r.Err = err
	}
}

// roundTrip sends the request on an idle connection (if reuse and one is
// there) or a new one and reads the response. A failure before the
// response is returned wrapped in a *url.Error, as net/http's client
// does; one in the body is set in r.Err as the net/http path sets it.
func (l *lean) roundTrip(ctx context.Context, t *leanTarget, deadline time.Time, r *Result, reuse bool) error {
	var c *leanConn
	if reuse && l.keepAlive {
		select {
		case c = <-t.idle:
		default:
		}
	}
	reused := c != nil
	if c == nil {
		dctx := ctx
		if !l.ownDial { // the caller's dial is bounded by the request's deadline
			var cancel context.CancelFunc
			dctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		connectStart := time.Now()
		conn, err := l.dial(dctx, "tcp", t.addr)
		if err != nil {
			return l.fail(ctx, t, err)
		}
		r.Connect = time.Since(connectStart)
		c = &leanConn{Conn: conn, br: leanReaders.Get().(*bufio.Reader), headerLeft: -1}
		c.br.Reset(c)
	}
	r.NewConn, r.Conn = !reused, localAddrPort(c.Conn)
	keep := false
	defer func() {
		if keep {
			select {
			case t.idle <- c:
				return
			default:
			}
		}
		c.Close()
		c.br.Reset(nil)
		leanReaders.Put(c.br)
	}()
	c.SetDeadline(deadline)
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	if _, err := c.Write(t.req); err != nil {
		if reused {
			return errLeanRetry
		}
		return l.fail(ctx, t, err)
	}
	c.headerLeft = MaxResponseHeaderBytes
	if _, err := c.br.Peek(1); err != nil {
		if reused && !isTimeout(err) {
			return errLeanRetry
		}
		return l.fail(ctx, t, err)
	}
	r.TTFB = time.Since(r.Start)
	if l.tcpInfo {
		r.TCPMinRTT = minRTT(c.Conn)
	}
	h, err := readLeanHead(c, t.get)
	if err != nil {
		if c.headerLeft == 0 { // as net/http: whatever failed, the header was too long
			err = ErrHeaderTooLarge
		}
		return l.fail(ctx, t, err)
	}
	c.headerLeft = -1 // the body is not bounded
	r.Status, r.ServerTiming = h.status, h.serverTiming
	var n int64
	n, r.ServerTimingTrailer, err = readLeanBody(c.br, &h)
	r.Bytes = n
	r.Err = checkLength(l.ctxErr(ctx, err), n, h.length)
	keep = !h.close && l.keepAlive && r.Err == nil && c.pending == nil
	return nil
}

// readLeanBody reads the body that h announces from br, counting its bytes.
func readLeanBody(br *bufio.Reader, h *leanHead) (n int64, trailer time.Duration, err error) {
	switch {
	case h.resp != nil: // parsed by net/http
		body := h.resp.Body
		if h.upgraded {
			body = io.NopCloser(br) // net/http's transport gives the rest of the connection
		}
		n, err = discardBody(body)
		if st := h.resp.Trailer.Get("Server-Timing"); st != "" && err == nil {
			trailer, _ = ParseServerTiming(st, "app")
		}
	case h.status == http.StatusNoContent || h.status == http.StatusNotModified:
	case h.chunked:
		n, err = discardBody(httputil.NewChunkedReader(br))
		if err == nil {
			trailer, err = readLeanTrailer(br)
		}
	case h.length >= 0:
		var m int
		m, err = br.Discard(int(h.length))
		n = int64(m)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	default: // to EOF
		n, err = discardBody(br)
	}
	return n, trailer, err
}

// discardBody reads r to its end and counts the bytes, without allocating.
func discardBody(r io.Reader) (int64, error) {
	var buf [4096]byte
	var n int64
	for {
		m, err := r.Read(buf[:])
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// fail is err as the net/http client reports it: a *url.Error, with the
// context's error for a cancelled or timed-out request.
func (l *lean) fail(ctx context.Context, t *leanTarget, err error) error {
	return &url.Error{Op: "Get", URL: t.url, Err: l.ctxErr(ctx, err)}
}

// ctxErr turns a deadline error into what caused it: the context's end,
// or the request timeout (context.DeadlineExceeded, as net/http reports it).
func (l *lean) ctxErr(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return context.DeadlineExceeded
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
