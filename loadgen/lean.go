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
	"net/textproto"
	"net/url"
	"os"
	"strconv"
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
// its trailers, or to EOF) from a pooled buffer. It measures what the
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
	idle chan *leanConn
}

// leanConn is a connection with its read buffer, which may hold the start
// of the next response.
type leanConn struct {
	net.Conn
	br *bufio.Reader
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
	return &leanTarget{url: raw, addr: addr, req: b.Bytes(), idle: idle.(chan *leanConn)}
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
		br := leanReaders.Get().(*bufio.Reader)
		br.Reset(conn)
		c = &leanConn{Conn: conn, br: br}
	}
	r.NewConn = !reused
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
	h, err := readLeanHead(c.br)
	if err != nil {
		return l.fail(ctx, t, err)
	}
	r.Status, r.ServerTiming = h.status, h.serverTiming
	var n int64
	switch {
	case h.status == http.StatusNoContent || h.status == http.StatusNotModified:
		keep = !h.close
	case h.chunked:
		cr := httputil.NewChunkedReader(c.br)
		n, err = discardBody(cr)
		if err == nil {
			r.ServerTimingTrailer, err = readLeanTrailer(c.br)
		}
		keep = err == nil && !h.close
	case h.length >= 0:
		var m int
		m, err = c.br.Discard(int(h.length))
		n = int64(m)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		keep = err == nil && !h.close
	default: // to EOF
		n, err = discardBody(c.br)
	}
	r.Bytes = n
	r.Err = checkLength(l.ctxErr(ctx, err), n, h.length)
	keep = keep && l.keepAlive && r.Err == nil
	return nil
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

// leanHead is what lean needs of a response header.
type leanHead struct {
	status       int
	length       int64 // -1 when unknown
	chunked      bool
	close        bool
	serverTiming time.Duration
}

var errLeanMalformed = errors.New("malformed HTTP response")

// readLeanHead reads a status line and header, skipping 1xx responses.
func readLeanHead(br *bufio.Reader) (leanHead, error) {
	for {
		h := leanHead{length: -1}
		line, err := br.ReadSlice('\n')
		if err != nil {
			return h, err
		}
		// "HTTP/1.1 200 OK"
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return h, errLeanMalformed
		}
		if h.status, err = strconv.Atoi(string(line[9:12])); err != nil {
			return h, errLeanMalformed
		}
		h.close = line[7] == '0' // HTTP/1.0 closes unless told otherwise
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return h, err
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return h, errLeanMalformed
			}
			value = bytes.TrimSpace(value)
			switch {
			case asciiEqualFold(name, "Content-Length"):
				if h.length, err = strconv.ParseInt(string(value), 10, 64); err != nil || h.length < 0 {
					return h, errLeanMalformed
				}
			case asciiEqualFold(name, "Transfer-Encoding"):
				h.chunked = asciiEqualFold(value, "chunked")
			case asciiEqualFold(name, "Connection"):
				h.close = asciiEqualFold(value, "close")
			case asciiEqualFold(name, "Server-Timing") && h.serverTiming == 0:
				h.serverTiming, _ = ParseServerTiming(string(value), "app")
			}
		}
		if h.status >= 200 || h.status == http.StatusSwitchingProtocols {
			if h.chunked {
				h.length = -1
			}
			return h, nil
		}
	}
}

// readLeanTrailer reads a chunked body's trailer, returning its
// Server-Timing app;dur.
func readLeanTrailer(br *bufio.Reader) (time.Duration, error) {
	tp := textproto.NewReader(br)
	var st time.Duration
	for {
		line, err := tp.ReadLineBytes()
		if err != nil {
			return st, err
		}
		if len(line) == 0 {
			return st, nil
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && asciiEqualFold(name, "Server-Timing") && st == 0 {
			st, _ = ParseServerTiming(string(bytes.TrimSpace(value)), "app")
		}
	}
}

// asciiEqualFold reports whether b is s, ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
