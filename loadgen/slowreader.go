package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Slow reader defaults from docs/experiments.md section 1.
const (
	DefaultSlowRcvBuf   = 8 << 10
	DefaultSlowReadSize = 16 << 10
	DefaultSlowRate     = 2 << 20 // bytes per second
)

// SlowReader downloads a URL the way a slow client does: a small receive
// buffer set before connect, reads of at most ReadSize, and reads paced so
// that body bytes consumed / time since the response began never exceeds
// Rate. It paces the
// reader; it does not shape the network.
type SlowReader struct {
	URL      *url.URL
	RcvBuf   int     // SO_RCVBUF in bytes before connect (Linux reports double)
	ReadSize int     // at most this many bytes per read
	Rate     float64 // bytes per second
	Timeout  time.Duration
	Header   http.Header
	RunID    string
	Metrics  *Metrics
	// TracerProvider, when set, gives each download a client span from
	// before connect to its last paced read, and a W3C traceparent header.
	TracerProvider trace.TracerProvider
	// AllowRemote lets the reader connect to an address that is not
	// loopback; without it the connection is refused just before connect
	// (an error wrapping ErrNotLoopback), as a Client's is.
	AllowRemote bool
	// OnConnect, when set, is called with the client number and the
	// socket's local address once connected, before the request is sent.
	OnConnect func(client int, local netip.AddrPort)
	// OnResult, when set, gets the download's request as a Result (what
	// Metrics observes of it) when it ends, for a process that keeps the
	// metrics of a load generator running elsewhere.
	OnResult func(Result)
	// Stall, when above 0, makes a stalled reader: once StallAfter body
	// bytes are read (paced to Rate; 0 stalls right after the header),
	// it reads nothing for Stall, its receive buffer full and its window
	// closed, then reads what is left as fast as it comes, to see what
	// the server did meanwhile. Timeout still bounds the whole download:
	// past it the client gives up and closes.
	Stall      time.Duration
	StallAfter int64
}

// Download is one slow reader's result.
type Download struct {
	Client   int
	Start    time.Time     // request sent after connect
	Receive  time.Duration // Start until the last chunk was consumed, final pacing wait included
	Status   int
	Bytes    int64
	Complete bool // status 200 and every Content-Length byte consumed
	Err      error
	// Local is the client socket's address (zero if it never connected):
	// with the server's address it names the download's socket in
	// sock_diag, for samplers that follow its bytes hop by hop.
	Local netip.AddrPort
	// Header is the response's header (nil without a response).
	Header http.Header
	// For a stalled reader (SlowReader.Stall): Stalled is when it stopped
	// reading and Resumed when it read again (zero if it never got
	// there), StallBytes the body bytes read before the stall; LastByte
	// is when the last body byte was read, for any reader.
	Stalled, Resumed time.Time
	StallBytes       int64
	LastByte         time.Time
}

// Run performs one paced download as client number client.
func (s SlowReader) Run(ctx context.Context, client int) Download {
	d := Download{Client: client}
	if s.URL == nil {
		d.Err = errors.New("slow reader: no URL")
		return d
	}
	lbl := s.Metrics.with(s.RunID, RoleSlow)
	lbl.start()
	r := Result{Start: time.Now(), NewConn: true}
	var rt *reqTrace
	if t := newTracer(s.TracerProvider); t != nil {
		rt = t.begin(ctx, "", &r, targetAttrs(s.URL, s.RunID, RoleSlow))
		rt.span.SetAttributes(AttrSlowClient.Int(client), AttrReadRate.Float64(s.Rate), AttrRcvBuf.Int(s.RcvBuf))
		ctx = rt.ctx
	}
	hooks := rt.phaseHooks()
	defer func() {
		r.Status, r.Bytes, r.Err = d.Status, d.Bytes, d.Err
		hooks.bodyDone(d.Err)
		r.Latency = time.Since(r.Start)
		rt.end(&r)
		lbl.observe(&r)
		if s.OnResult != nil {
			s.OnResult(r)
		}
	}()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	conn, err := s.dial(ctx, hooks, &r)
	if err != nil {
		d.Err = err
		return d
	}
	defer conn.Close()
	if a, ok := conn.LocalAddr().(*net.TCPAddr); ok {
		ap := a.AddrPort()
		d.Local = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if s.OnConnect != nil {
		s.OnConnect(client, d.Local)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	resp, err := s.request(ctx, conn, rt, hooks, &d, &r)
	if err != nil {
		d.Err = err
		d.Receive = time.Since(d.Start)
		return d
	}
	defer resp.Body.Close()
	s.read(ctx, resp, &d, time.Now())
	d.Receive = time.Since(d.Start)
	d.Err = checkLength(d.Err, d.Bytes, resp.ContentLength)
	d.Complete = d.Err == nil && d.Status == http.StatusOK
	return d
}

// dial connects with the small receive buffer set before connect.
func (s SlowReader) dial(ctx context.Context, hooks *rawPhases, r *Result) (net.Conn, error) {
	dialer := net.Dialer{Control: chainControl(dialGuard(s.AllowRemote), rcvBufControl(s.RcvBuf))}
	addr := hostPort(s.URL)
	hooks.connectStart(addr)
	connectStart := time.Now()
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	hooks.connectDone(addr, conn, err)
	if err == nil {
		r.Connect = time.Since(connectStart)
	}
	return conn, err
}

// request sends the GET (Connection: close) and reads the response header
// through a reader of ReadSize, so reads stay small.
func (s SlowReader) request(ctx context.Context, conn net.Conn, rt *reqTrace, hooks *rawPhases, d *Download, r *Result) (*http.Response, error) {
	req := &http.Request{Method: http.MethodGet, URL: s.URL, Host: s.URL.Host, Header: s.Header.Clone(), Close: true, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	rt.inject(req.Header)
	hooks.sendStart()
	err := req.Write(conn)
	hooks.sendDone(err)
	if err != nil {
		return nil, err
	}
	d.Start = time.Now()
	head := newHeadLimit(conn)
	br := bufio.NewReaderSize(head, s.ReadSize)
	if hooks != nil {
		if _, err := br.Peek(1); err == nil {
			hooks.firstByte()
		}
	}
	resp, err := head.readResponse(br, req)
	if err != nil {
		return nil, s.ctxErr(ctx, err)
	}
	r.TTFB = time.Since(r.Start)
	d.Status = resp.StatusCode
	d.Header = resp.Header
	if st := resp.Header.Get("Server-Timing"); st != "" {
		r.ServerTiming, _ = ParseServerTiming(st, "app")
	}
	return resp, nil
}

// read consumes the body at most ReadSize at a time, pacing the reads so
// that bytes read / time since the response began (its header read, at
// paceFrom) never exceeds Rate. Pacing from the request instead would let
// a reader that waited for a busy server (queued behind other slow
// readers for a worker) read the whole body at once, as no client on a
// slow link can: the time it waited is not bandwidth it saved.
func (s SlowReader) read(ctx context.Context, resp *http.Response, d *Download, paceFrom time.Time) {
	buf := make([]byte, s.ReadSize)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	stalling := s.Stall > 0
	for {
		if stalling && d.Bytes >= s.StallAfter {
			if !s.stall(ctx, d, timer) {
				return
			}
			stalling = false
		}
		want := buf
		if stalling {
			want = buf[:min(int64(len(buf)), s.StallAfter-d.Bytes)]
		}
		n, err := resp.Body.Read(want)
		d.Bytes += int64(n)
		if n > 0 {
			d.LastByte = time.Now()
		}
		if n > 0 && d.Resumed.IsZero() {
			due := paceFrom.Add(time.Duration(float64(d.Bytes) / s.Rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-ctx.Done():
					d.Err = ctx.Err()
					return
				}
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			d.Err = s.ctxErr(ctx, err)
			return
		}
	}
}

// stall reads nothing for Stall, then notes when reading resumed; false
// when ctx ended first (the client gives up).
func (s SlowReader) stall(ctx context.Context, d *Download, timer *time.Timer) bool {
	d.Stalled, d.StallBytes = time.Now(), d.Bytes
	timer.Reset(s.Stall)
	select {
	case <-timer.C:
		d.Resumed = time.Now()
		return true
	case <-ctx.Done():
		d.Err = ctx.Err()
		return false
	}
}

// ctxErr prefers the context's error over the deadline error it caused.
func (s SlowReader) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}
