package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/internal/bounded"
)

// upstream is one request's connection to the app, and the accounting of
// the body it relays (listed in Proxy.flows from the dial on). It is never
// reused.
type upstream struct {
	conn  net.Conn
	resp  *http.Response
	start time.Time // before dialing
	flow  flow

	// tc and br are the connection as the request was written and the
	// response read: a tunnel (Options.WebSocket) goes on with them.
	tc *timeoutConn
	br *bufio.Reader

	once sync.Once
	stop func() bool // stops the context watcher
}

// close closes the connection; safe to call more than once and concurrently.
func (u *upstream) close() {
	u.once.Do(func() {
		u.stop()
		u.conn.Close()
	})
}

// stageError is an upstream failure before the body, with where it happened.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return "upstream " + e.stage + ": " + e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// timedOut reports whether err is a connect, read or write timeout.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// openUpstream dials the upstream, sends r on it and reads the response
// header. The connection is closed when ctx is done, which unblocks reads.
// The request is listed in Buffered from the dial on; on success the
// caller unlists it (untrack) when it is done.
func (p *Proxy) openUpstream(ctx context.Context, r *http.Request) (*upstream, error) {
	start := time.Now()
	d := net.Dialer{Timeout: p.opts.UpstreamTimeout}
	conn, err := d.DialContext(ctx, "tcp", p.opts.Upstream)
	if err != nil {
		return nil, &stageError{stageConnect, err}
	}
	u := &upstream{conn: conn, start: start}
	u.flow.client, u.flow.upstreamLocal, u.flow.buffering = r.RemoteAddr, conn.LocalAddr(), p.opts.Buffering
	p.track(&u.flow)
	u.stop = context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(stage string, err error) (*upstream, error) {
		u.close()
		p.untrack(&u.flow)
		return nil, &stageError{stage, err}
	}
	tc := &timeoutConn{Conn: conn, timeout: p.opts.UpstreamTimeout}

	out := outgoingRequest(r, p.opts.Upstream)
	upgrade := p.opts.WebSocket && wantsUpgrade(r)
	if upgrade { // NGINX: proxy_set_header Upgrade $http_upgrade; Connection "upgrade"
		out.Header.Set("Upgrade", r.Header.Get("Upgrade"))
		out.Header.Set("Connection", "upgrade")
		out.Close = false
	}
	bw := bufio.NewWriterSize(tc, p.opts.BufferSize)
	write := out.Write
	if p.opts.UpstreamHTTP10 {
		write = func(w io.Writer) error { return writeRequest10(w, out) }
	}
	if err := write(bw); err != nil {
		return fail(stageSend, err)
	}
	if err := bw.Flush(); err != nil {
		return fail(stageSend, err)
	}
	// The header must fit proxy_buffer_size in NGINX; here the buffer only
	// sizes the reads, and body bytes read with the header are kept.
	// What bounds it is maxUpstreamHeaderBytes, 1xx responses included,
	// as http.Transport's MaxResponseHeaderBytes does; the body reads through.
	hl := &bounded.Header{R: tc, Left: maxUpstreamHeaderBytes, Err: errUpstreamHeaderTooLarge}
	br := bufio.NewReaderSize(hl, p.opts.BufferSize)
	for {
		resp, err := http.ReadResponse(br, out)
		if err != nil && hl.Reached() {
			err = errUpstreamHeaderTooLarge
		}
		if err != nil {
			return fail(stageHeader, err)
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols && upgrade:
			hl.Lift()
			u.resp, u.tc, u.br = resp, tc, br
			return u, nil
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return fail(stageHeader, errors.New("protocol upgrades are not proxied"))
		case resp.StatusCode < 200:
			continue // 100 Continue, 103 Early Hints: informational, skip
		}
		hl.Lift()
		u.resp = resp
		return u, nil
	}
}

// maxUpstreamHeaderBytes bounds the upstream's response header, 1xx
// responses included: net/http's default for a request header, which
// http.Transport's default (10 MiB) is ten times.
const maxUpstreamHeaderBytes = http.DefaultMaxHeaderBytes

// errUpstreamHeaderTooLarge is an upstream response header over
// maxUpstreamHeaderBytes (NGINX's "upstream sent too big header").
var errUpstreamHeaderTooLarge = fmt.Errorf("response header over %d bytes", maxUpstreamHeaderBytes)

// outgoingRequest is r as sent upstream: same method, target and end-to-end
// headers, Host set to the upstream (NGINX's default $proxy_host) and
// "Connection: close".
func outgoingRequest(r *http.Request, host string) *http.Request {
	h := r.Header.Clone()
	removeHopByHop(h)
	h.Del("Expect") // the proxy has the body already (or reads it itself)
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // keep Request.Write from adding Go's
	}
	out := &http.Request{
		Method:        r.Method,
		URL:           &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Host:          host,
		Close:         true,
		ContentLength: r.ContentLength,
	}
	if r.ContentLength != 0 {
		out.Body = r.Body // -1 (unknown) is sent chunked
	}
	return out
}

// writeRequest10 writes out as an HTTP/1.0 request, as NGINX does with
// proxy_http_version 1.0 (Request.Write always says HTTP/1.1): the
// request line, Host, "Connection: close", the Content-Length of a body
// (whose length is known: bufferRequest read one of unknown length
// whole), the other headers, then the body.
func writeRequest10(w io.Writer, out *http.Request) error {
	h := out.Header.Clone()
	for _, k := range []string{"Host", "Content-Length", "Connection", "Transfer-Encoding"} {
		h.Del(k)
	}
	if ua := h["User-Agent"]; len(ua) == 1 && ua[0] == "" {
		h.Del("User-Agent")
	}
	if _, err := fmt.Fprintf(w, "%s %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n", out.Method, out.URL.RequestURI(), out.Host); err != nil {
		return err
	}
	if out.Body != nil {
		if out.ContentLength < 0 {
			return errors.New("HTTP/1.0 request body of unknown length")
		}
		if _, err := fmt.Fprintf(w, "Content-Length: %d\r\n", out.ContentLength); err != nil {
			return err
		}
	}
	if err := h.Write(w); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\r\n"); err != nil {
		return err
	}
	if out.Body == nil {
		return nil
	}
	n, err := io.Copy(w, io.LimitReader(out.Body, out.ContentLength))
	if err == nil && n < out.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// closeDelimited reports whether resp's body ends when the upstream
// closes the connection: neither a Content-Length nor chunked, what an
// app answers a stream of unknown length to an HTTP/1.0 request.
func closeDelimited(resp *http.Response) bool {
	return resp.ContentLength < 0 && len(resp.TransferEncoding) == 0
}

// hopHeaders are meaningful for one connection only (RFC 9110 section 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopByHop deletes hop-by-hop headers, including those named in
// Connection.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// copyResponseHeader sets the client response header from the upstream's.
// Content-Length stays (http.ReadResponse keeps it unless the body was
// chunked), so net/http sends the body with the same framing.
func copyResponseHeader(dst http.Header, resp *http.Response) {
	src := resp.Header.Clone()
	removeHopByHop(src)
	for k, vv := range src {
		dst[k] = vv
	}
	if _, ok := dst["Content-Type"]; !ok {
		dst["Content-Type"] = nil // relay as is: no sniffing by net/http
	}
}

// timeoutConn gives every read and write its own deadline, like NGINX's
// proxy_read_timeout and proxy_send_timeout (between two operations, not
// for the whole response).
type timeoutConn struct {
	net.Conn
	timeout time.Duration
}

func (c *timeoutConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *timeoutConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
