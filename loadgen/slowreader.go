package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Slow reader defaults from EXPERIMENTS.md section 1.
const (
	DefaultSlowRcvBuf   = 8 << 10
	DefaultSlowReadSize = 16 << 10
	DefaultSlowRate     = 2 << 20 // bytes per second
)

// SlowReader downloads a URL the way a slow client does: a small receive
// buffer set before connect, reads of at most ReadSize, and reads paced so
// that bytes consumed / time elapsed never exceeds Rate. It paces the
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
}

// Validate reports settings that cannot run.
func (s SlowReader) Validate() error {
	switch {
	case s.RcvBuf < 0:
		return fmt.Errorf("receive buffer %d: must be 0 (kernel default) or more bytes", s.RcvBuf)
	case s.ReadSize < 1:
		return fmt.Errorf("read size %d: must be at least 1 byte", s.ReadSize)
	case !(s.Rate > 0):
		return fmt.Errorf("read rate %v: must be more than 0 bytes/s", s.Rate)
	}
	return nil
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
	}()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dialer := net.Dialer{Control: rcvBufControl(s.RcvBuf)}
	addr := hostPort(s.URL)
	hooks.connectStart(addr)
	connectStart := time.Now()
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	hooks.connectDone(addr, conn, err)
	if err != nil {
		d.Err = err
		return d
	}
	r.Connect = time.Since(connectStart)
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req := &http.Request{Method: http.MethodGet, URL: s.URL, Host: s.URL.Host, Header: s.Header.Clone(), Close: true, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	rt.inject(req.Header)
	hooks.sendStart()
	err = req.Write(conn)
	hooks.sendDone(err)
	if err != nil {
		d.Err = err
		return d
	}
	d.Start = time.Now()
	br := bufio.NewReaderSize(conn, s.ReadSize)
	if hooks != nil {
		if _, err := br.Peek(1); err == nil {
			hooks.firstByte()
		}
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		d.Err = s.ctxErr(ctx, err)
		d.Receive = time.Since(d.Start)
		return d
	}
	r.TTFB = time.Since(r.Start)
	d.Status = resp.StatusCode
	if st := resp.Header.Get("Server-Timing"); st != "" {
		r.ServerTiming, _ = ParseServerTiming(st, "app")
	}
	defer resp.Body.Close()

	buf := make([]byte, s.ReadSize)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		n, err := resp.Body.Read(buf)
		d.Bytes += int64(n)
		if n > 0 {
			due := d.Start.Add(time.Duration(float64(d.Bytes) / s.Rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-ctx.Done():
					d.Err = ctx.Err()
					d.Receive = time.Since(d.Start)
					return d
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			d.Err = s.ctxErr(ctx, err)
			break
		}
	}
	d.Receive = time.Since(d.Start)
	d.Err = checkLength(d.Err, d.Bytes, resp.ContentLength)
	d.Complete = d.Err == nil && d.Status == http.StatusOK
	return d
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
