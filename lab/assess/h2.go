package assess

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// The HTTP/2 probes' clients are loadgen's HTTP/2 readers (loadgen.H2Conn):
// slow by flow control, not by their TCP window. Each stream is paced as
// the slow-readers probe paces its readers (the large response over
// twice the level's hold), with a stream window of h2StreamWindow, on a
// connection whose window never binds (h2ConnWindow). A stream counts in
// place once its request went out (its HEADERS frame written), as a
// held stream counts once its request was written: what the client
// itself observes at once. Its response headers would say more (the app,
// or a buffering proxy, answered), but a stream the proxy queued for a
// busy app is a client the stack took all the same, and counting it only
// once answered would call a level above a sync app's workers short
// (the stack "did not take" its clients) instead of degraded.
const (
	h2StreamWindow = 64 << 10
	h2ConnWindow   = 1 << 30
	// h2FastStreamWindow is /fast's streams' window: its responses are
	// never held by flow control (as loadgen --http2's).
	h2FastStreamWindow = 1 << 20
)

// h2Front is how the clients reach a front that speaks HTTP/2: its
// address, the requests' :authority, and TLS (with ALPN h2) or nil for
// cleartext with prior knowledge (h2c).
type h2Front struct {
	addr, authority string
	tls             *tls.Config
	allowRemote     bool
}

// newH2Front is the front of URL u: TLS by tlsCfg on https:// (nil: the
// system's roots), cleartext on http://.
func newH2Front(u *url.URL, tlsCfg *tls.Config, allowRemote bool) *h2Front {
	f := &h2Front{authority: u.Host, allowRemote: allowRemote}
	port := cmp.Or(u.Port(), "80")
	if u.Scheme == "https" {
		f.tls, port = cmp.Or(tlsCfg, &tls.Config{}), cmp.Or(u.Port(), "443")
	}
	f.addr = net.JoinHostPort(u.Hostname(), port)
	return f
}

// dial opens one HTTP/2 connection to the front with stream window sw,
// each stream (and the connect) bounded by timeout.
func (f *h2Front) dial(ctx context.Context, sw uint32, timeout time.Duration) (*loadgen.H2Conn, error) {
	return loadgen.DialH2(ctx, loadgen.H2Options{Addr: f.addr, Authority: f.authority, TLS: f.tls.Clone(), StreamWindow: sw,
		ConnWindow: h2ConnWindow, Timeout: timeout, AllowRemote: f.allowRemote})
}

// get fetches raw's path over one new HTTP/2 connection, reading as the
// bytes come: its body's size and how long it took; an error for a
// failed stream or a status that is not 2xx.
func (f *h2Front) get(ctx context.Context, raw string, timeout time.Duration) (int64, time.Duration, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, 0, err
	}
	c, err := f.dial(ctx, h2FastStreamWindow, timeout)
	if err != nil {
		return 0, 0, fmt.Errorf("http/2: %w", err)
	}
	defer c.Close()
	r := <-c.Get(u.RequestURI(), loadgen.H2Read{})
	switch {
	case r.Err != nil:
		return 0, 0, fmt.Errorf("http/2: %w", r.Err)
	case r.Status < 200 || r.Status > 299:
		return 0, 0, fmt.Errorf("http/2: status %d, want 2xx", r.Status)
	case !r.Complete && r.Status == http.StatusOK:
		return 0, 0, fmt.Errorf("http/2: response incomplete (%s)", report.Count(int(r.Bytes), "byte"))
	}
	return r.Bytes, r.Total, nil
}

// startH2 runs the n slow streams of an HTTP/2 probe: each on its own
// connection (h2-slow-streams) or all on one (h2-streams-one-conn).
func (p Probe) startH2(ctx context.Context, t targets, n int, hold time.Duration, c *crowd) {
	defer close(c.done)
	if p == ProbeH2OneConn {
		streams(ctx, t, n, hold, c)
		return
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { streams(ctx, t, 1, hold, c) })
	}
	wg.Wait()
}

// streams runs k slow streams on one new connection; a connection that
// cannot be opened ends them with its error.
func streams(ctx context.Context, t targets, k int, hold time.Duration, c *crowd) {
	conn, err := t.h2large.dial(ctx, h2StreamWindow, 4*hold)
	if err != nil {
		for range k {
			c.place()
			c.end(loadgen.ErrorReason(err), false)
		}
		return
	}
	defer conn.Close()
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() { stream(ctx, conn, t, hold, c) })
	}
	wg.Wait()
}

// stream runs one slow stream of the large URL on conn until its
// response is read, its bound, or the level ends (ctx: the connection is
// closed, ending its streams).
func stream(ctx context.Context, conn *loadgen.H2Conn, t targets, hold time.Duration, c *crowd) {
	ch := conn.Get(t.large.RequestURI(), loadgen.H2Read{Rate: paced(t.largeSize, hold)})
	select {
	case r := <-ch: // it ended at once: refused, or the connection gone
		c.place()
		c.end(h2End(ctx, r), false)
		return
	default:
	}
	c.connect()
	c.place()
	var r loadgen.H2Result
	select {
	case r = <-ch:
	case <-ctx.Done():
		conn.Close()
		r = <-ch
	}
	c.end(h2End(ctx, r), true)
}

// h2End is how a slow stream ended: as a download (endOf), but reset by
// the server, or at the level's end.
func h2End(ctx context.Context, r loadgen.H2Result) string {
	var reset loadgen.H2ResetError
	switch {
	case r.Complete:
	case errors.As(r.Err, &reset):
		return "reset " + reset.Code.String()
	case ctx.Err() != nil:
		return loadgen.ErrorReason(ctx.Err())
	}
	return endOf(r.Complete, r.Err, r.Status)
}

// fastH2 runs /fast's window f as streams on one HTTP/2 connection of
// its own (loadgen's open loop over HTTP/2, as `slowlab loadgen --http2`
// sends it). A connection that cannot be opened is one failed request,
// with no row: the window degraded, or the baseline failed.
func (r *run) fastH2(ctx context.Context, f lab.FastSpec, meta recorder.RunMeta, t0 time.Time) (Window, error) {
	conn, err := r.t.h2.dial(ctx, h2FastStreamWindow, r.fastTimeout)
	if err != nil {
		return Window{Sent: 1, Failed: 1, FirstError: "http/2 connection: " + err.Error()}, nil
	}
	defer conn.Close()
	got := f.RunH2(ctx, r.env, conn, r.t.fast, meta, t0, r.reqs)
	return summarize(got.Reqs), got.WriteErr
}

// checkTarget checks raw as loadgen.CheckTarget does; a front that speaks
// HTTP/2 (h2) takes https:// too (TLS with ALPN h2).
func checkTarget(raw string, allowRemote, h2 bool) (*url.URL, error) {
	if h2 {
		return loadgen.CheckH2Target(raw, allowRemote)
	}
	return loadgen.CheckTarget(raw, allowRemote)
}
