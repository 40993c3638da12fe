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
	"os"
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

// Result is one request as the client saw it. Times are absolute; callers
// make them relative to their run start.
type Result struct {
	Seq          int
	Worker       int       // closed-loop worker or holder that sent it
	Scheduled    bool      // part of an open-loop schedule
	ScheduledAt  time.Time // when it was due (open loop only)
	Start        time.Time // when it actually started
	ScheduleLag  time.Duration
	NewConn      bool // a TCP connection was opened for it
	Connect      time.Duration
	TTFB         time.Duration // start to first response byte
	Latency      time.Duration // start to last body byte (or to the error)
	Status       int           // 0 when no response arrived
	Bytes        int64         // body bytes received
	ServerTiming time.Duration // the server's app;dur, 0 when absent
	Err          error
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
}

// Client sends GET requests and times their phases with httptrace.
type Client struct {
	hc     *http.Client
	opts   ClientOptions
	tracer *tracer // nil: no spans
}

// NewClient returns a Client. Close it to release idle connections.
func NewClient(o ClientOptions) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	d := &net.Dialer{Timeout: o.Timeout, Control: rcvBufControl(o.RcvBuf)}
	tr := &http.Transport{
		DialContext:         d.DialContext,
		DisableKeepAlives:   !o.KeepAlive,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &Client{hc: &http.Client{Transport: tr, CheckRedirect: noRedirect}, opts: o, tracer: newTracer(o.TracerProvider)}
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close drops idle keep-alive connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

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
	var connectStart time.Time
	hooks := &httptrace.ClientTrace{
		ConnectStart: func(_, _ string) { connectStart = time.Now() },
		ConnectDone: func(_, _ string, err error) {
			if err == nil && !connectStart.IsZero() {
				r.Connect = time.Since(connectStart)
			}
		},
		GotConn:              func(info httptrace.GotConnInfo) { r.NewConn = !info.Reused },
		GotFirstResponseByte: func() { r.TTFB = time.Since(r.Start) },
	}
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
		rt.bodyDone(err, r.TTFB > 0)
		r.Latency = time.Since(r.Start)
		return
	}
	r.Status = resp.StatusCode
	if st := resp.Header.Get("Server-Timing"); st != "" {
		r.ServerTiming, _ = ParseServerTiming(st, "app")
	}
	r.Bytes, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.Err = checkLength(err, r.Bytes, resp.ContentLength)
	rt.bodyDone(r.Err, true)
	r.Latency = time.Since(r.Start)
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
	if size <= 0 {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
		}); err != nil {
			return err
		}
		if serr != nil {
			return os.NewSyscallError("setsockopt SO_RCVBUF", serr)
		}
		return nil
	}
}

// ErrorReason maps an error to a bounded metric label value.
func ErrorReason(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, ErrIncomplete):
		return "incomplete"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return "other"
}
