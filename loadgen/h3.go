package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// The receive windows an H3Conn takes.
const (
	// H3MinWindow is the smallest: an HTTP/3 response's HEADERS frame
	// travels in its stream's flow-controlled bytes (unlike HTTP/2's), so
	// a window must hold it before the reader can see a status.
	H3MinWindow = 4 << 10
	// H3MaxWindow is the largest, HTTP/2's: a stream's unread bytes wait
	// in the client's memory, up to its window.
	H3MaxWindow = H2MaxWindow
)

// H3Options are one HTTP/3 connection's: where it goes and the QUIC
// receive windows it advertises. An HTTP/3 client is slow the way an
// HTTP/2 one is, by flow control: a stream's window opens (MAX_STREAM_DATA)
// only as its reader consumes, the connection's (MAX_DATA) as all of
// them do. quic-go grows windows that fill fast up to a maximum; here
// each window's initial and maximum are the same, so a reader's window
// is what it asked for.
type H3Options struct {
	Addr      string // host:port, UDP
	Authority string // the requests' :authority; Addr when empty
	// TLS is required (QUIC is always TLS, ALPN "h3"): the roots that
	// trust the server's certificate.
	TLS *tls.Config
	// StreamWindow is every stream's receive window, ConnWindow the
	// connection's, shared by its streams: H3MinWindow to H3MaxWindow.
	StreamWindow, ConnWindow uint64
	Timeout                  time.Duration // bounds the handshake and each stream; 0 is none
	AllowRemote              bool          // as SlowReader's
}

// H3Conn is one HTTP/3 connection (QUIC, on a UDP socket of its own)
// whose streams are read as their H2Read says, with the same per-stream
// facts as H2Conn's (H2Result). Its methods are safe to call from
// several goroutines. Streams beyond the server's limit
// (MAX_STREAMS; NGINX's http3_max_concurrent_streams) wait to be opened,
// as QUIC has them do, rather than being refused as HTTP/2's are: a
// result's Start is when its stream opened.
type H3Conn struct {
	opts      H3Options
	authority string
	udp       *net.UDPConn
	tr        *quic.Transport
	qc        *quic.Conn
	cc        *http3.ClientConn
	ctx       context.Context // ends with the connection
	cancel    context.CancelFunc
	streams   sync.WaitGroup
}

// DialH3 does the QUIC handshake (ALPN h3) with opts' windows. Close ends
// the connection.
func DialH3(ctx context.Context, o H3Options) (*H3Conn, error) {
	if o.StreamWindow < H3MinWindow || o.StreamWindow > H3MaxWindow || o.ConnWindow < H3MinWindow || o.ConnWindow > H3MaxWindow {
		return nil, fmt.Errorf("http/3 windows: stream %d, connection %d: want each from %d (room for a response's HEADERS) to %d",
			o.StreamWindow, o.ConnWindow, H3MinWindow, H3MaxWindow)
	}
	if o.TLS == nil {
		return nil, errors.New("http/3: no TLS configuration: QUIC is always TLS, give the roots that trust the server")
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	raddr, err := net.ResolveUDPAddr("udp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("http/3 address %q: %w", o.Addr, err)
	}
	ap := raddr.AddrPort()
	if !o.AllowRemote && !isLoopbackAddr(ap.Addr()) {
		return nil, fmt.Errorf("%s: %w", ap, ErrNotLoopback)
	}
	local := &net.UDPAddr{} // any address of the server's family
	if ap.Addr().Unmap().Is4() {
		local.IP = net.IPv4zero
	}
	if !o.AllowRemote {
		local.IP = ap.Addr().Unmap().AsSlice() // the loopback address itself
	}
	udp, err := net.ListenUDP("udp", local)
	if err != nil {
		return nil, fmt.Errorf("http/3 socket: %w", err)
	}
	cfg := o.TLS.Clone()
	cfg.NextProtos = []string{http3.NextProtoH3}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(o.Addr)
	}
	tr := &quic.Transport{Conn: udp}
	qc, err := tr.Dial(ctx, raddr, cfg, &quic.Config{
		InitialStreamReceiveWindow: o.StreamWindow, MaxStreamReceiveWindow: o.StreamWindow,
		InitialConnectionReceiveWindow: o.ConnWindow, MaxConnectionReceiveWindow: o.ConnWindow,
		// A reader stalled for longer than the idle timeout keeps its
		// connection.
		KeepAlivePeriod: 5 * time.Second,
	})
	if err != nil {
		tr.Close()
		udp.Close()
		if strings.Contains(err.Error(), "no application protocol") {
			return nil, fmt.Errorf("quic: %w: the server does not speak HTTP/3", err)
		}
		return nil, fmt.Errorf("quic: %w", err)
	}
	c := &H3Conn{opts: o, authority: o.Authority, udp: udp, tr: tr, qc: qc}
	if c.authority == "" {
		c.authority = o.Addr
	}
	c.cc = (&http3.Transport{DisableCompression: true, MaxResponseHeaderBytes: MaxResponseHeaderBytes}).NewClientConn(qc)
	c.ctx, c.cancel = context.WithCancel(qc.Context())
	return c, nil
}

// LocalAddr is the client's end of the connection (its UDP socket).
func (c *H3Conn) LocalAddr() netip.AddrPort { return c.udp.LocalAddr().(*net.UDPAddr).AddrPort() }

// Err is why the connection ended (nil while it is open).
func (c *H3Conn) Err() error {
	if c.qc.Context().Err() == nil {
		return nil
	}
	return fmt.Errorf("http/3 connection: %w", context.Cause(c.qc.Context()))
}

// Close ends the connection (CONNECTION_CLOSE, H3_NO_ERROR); streams
// still open end with an error. It returns once they did.
func (c *H3Conn) Close() error {
	c.cancel()
	err := c.qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
	c.streams.Wait()
	c.tr.Close()
	c.udp.Close()
	return err
}

// Get opens a stream that GETs path and reads it as r says; its result
// comes on the channel once it ended (one value, then closed).
func (c *H3Conn) Get(path string, r H2Read) <-chan H2Result { return c.GetHeader(path, nil, r) }

// GetHeader is Get with request header fields h as well.
func (c *H3Conn) GetHeader(path string, h http.Header, r H2Read) <-chan H2Result {
	out := make(chan H2Result, 1)
	c.streams.Add(1)
	go func() {
		defer c.streams.Done()
		out <- c.stream(path, h, r)
		close(out)
	}()
	return out
}

// ErrH3Cut ends a stream its reader cancelled at H2Read.Until.
var ErrH3Cut = errors.New("http/3 stream cut by its reader")

// H3ResetError ends a stream the server reset (RESET_STREAM), with its
// HTTP/3 error code: a proxy's send_timeout, a handler that failed.
type H3ResetError struct{ Code http3.ErrCode }

func (e H3ResetError) Error() string {
	return fmt.Sprintf("the server reset the stream: %v", &http3.Error{Remote: true, ErrorCode: e.Code})
}

// h3StallPoll is how often a stalled reader looks, without reading a
// byte, whether the server reset its stream.
const h3StallPoll = 20 * time.Millisecond

// stream is one request: open, send the header, read the response as rd
// says, until it ended, failed, or the stream's context (the
// connection's, Timeout, Until) ended, which cancels the stream.
func (c *H3Conn) stream(path string, h http.Header, rd H2Read) H2Result {
	res := H2Result{Path: path, Start: time.Now()}
	ctx := c.ctx
	var cancel context.CancelFunc
	if c.opts.Timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.Timeout, fmt.Errorf("stream timed out after %v: %w", c.opts.Timeout, context.DeadlineExceeded))
		defer cancel()
	}
	if !rd.Until.IsZero() {
		ctx, cancel = context.WithDeadlineCause(ctx, rd.Until, ErrH3Cut)
		defer cancel()
	}
	u, err := url.Parse("https://" + c.authority + path)
	if err != nil || !strings.HasPrefix(path, "/") {
		res.Err = fmt.Errorf("path %q: not a request target", path)
		return res
	}
	str, err := c.cc.OpenRequestStream(ctx)
	res.Start = time.Now()
	if err != nil {
		res.Err = c.cause(ctx, fmt.Errorf("open stream: %w", err))
		return res
	}
	res.StreamID = uint32(str.StreamID())
	stop := context.AfterFunc(ctx, func() {
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	})
	defer stop()
	req := &http.Request{Method: http.MethodGet, URL: u, Host: c.authority, Header: http.Header{"User-Agent": {"slowlab"}}, Proto: "HTTP/3", ProtoMajor: 3}
	for name, vs := range h {
		req.Header[name] = vs
	}
	if err := str.SendRequestHeader(req); err != nil {
		res.Err = c.cause(ctx, fmt.Errorf("write headers: %w", err))
		return res
	}
	str.Close() // the request's end: GET has no body
	resp, err := str.ReadResponse()
	if err != nil {
		res.Err = c.cause(ctx, fmt.Errorf("read response: %w", err))
		res.Total = time.Since(res.Start)
		return res
	}
	r := h3reader{read: rd, body: resp.Body, respStart: time.Now()}
	res.FirstByte, res.Status = r.respStart.Sub(res.Start), resp.StatusCode
	err = r.run(ctx)
	res.Bytes, res.Stalled, res.Resumed = r.consumed, r.stalled, r.resumed
	end := r.lastConsume
	if err != nil || end.IsZero() {
		end = time.Now()
	}
	res.Total = end.Sub(res.Start)
	if err != nil {
		res.Err = c.cause(ctx, err)
	}
	res.Complete = res.Err == nil && res.Status == 200 && (resp.ContentLength < 0 || res.Bytes == resp.ContentLength)
	return res
}

// cause is why a stream ended with err: its context's cause when that
// ended it (cut, timed out, connection closed), the server's reset, or
// err.
func (c *H3Conn) cause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if c.ctx.Err() != nil {
			return fmt.Errorf("http/3 connection closed: %w", err)
		}
		return context.Cause(ctx)
	}
	if se, ok := errors.AsType[*quic.StreamError](err); ok && se.Remote {
		return H3ResetError{Code: http3.ErrCode(se.ErrorCode)}
	}
	if c.qc.Context().Err() != nil {
		return fmt.Errorf("http/3 connection: %w (%v)", err, context.Cause(c.qc.Context()))
	}
	return err
}

// h3reader reads one response body as its H2Read says: paced, stalled
// (reading nothing, looking every h3StallPoll whether the server reset
// the stream), then as bytes come.
type h3reader struct {
	read             H2Read
	body             io.Reader
	respStart        time.Time
	consumed         int64
	lastConsume      time.Time
	stalled, resumed time.Time
}

// run reads until the body ended (nil) or failed.
func (r *h3reader) run(ctx context.Context) error {
	buf := make([]byte, 32<<10)
	for {
		want := int64(len(buf))
		if r.read.Stall > 0 && r.stalled.IsZero() {
			if r.consumed >= r.read.StallAfter {
				if err := r.stall(ctx); err != nil {
					return err
				}
				continue
			}
			want = min(want, r.read.StallAfter-r.consumed)
		}
		if r.read.Rate > 0 && r.resumed.IsZero() {
			allowed := int64(r.read.Rate*time.Since(r.respStart).Seconds()) - r.consumed
			if allowed <= 0 {
				if err := sleepCtx(ctx, h2PaceTick); err != nil {
					return err
				}
				continue
			}
			want = min(want, allowed)
		}
		n, err := r.body.Read(buf[:want])
		if n > 0 {
			r.consumed += int64(n)
			r.lastConsume = time.Now()
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stall reads no byte for Stall: a zero-length read every h3StallPoll
// sees a reset (or the end) without taking data.
func (r *h3reader) stall(ctx context.Context) error {
	r.stalled = time.Now()
	for {
		left := r.read.Stall - time.Since(r.stalled)
		if left <= 0 {
			r.resumed = time.Now()
			return nil
		}
		if _, err := r.body.Read(nil); err != nil && err != io.EOF {
			return err
		}
		if err := sleepCtx(ctx, min(left, h3StallPoll)); err != nil {
			return err
		}
	}
}
