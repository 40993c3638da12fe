package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// heldUpstream is an app whose handlers write a 32 MiB body to a socket
// with a small, fixed send buffer, and count how many run at once: each
// is an app worker held. (With 4 MiB and loopback's autotuned buffers,
// the sockets between app and proxy took whole bodies while the client
// stalled, and the handlers returned.)
type heldUpstream struct {
	*httptest.Server
	running atomic.Int64
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	u := &heldUpstream{}
	const size = 32 << 20
	chunk := testBody(64 << 10)
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.running.Add(1)
		defer u.running.Add(-1)
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for off := 0; off < size; off += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	u.Listener.Close()
	u.Listener = listen(t, smallSndbuf)
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// One HTTP/2 connection to the proxy (h2c, buffering off) holds one
// upstream connection, and so one app worker, per stream: 8 stalled
// streams on one connection are 8 handlers running at once, the proxy
// counts 8 HTTP/2 streams, and closing the connection frees them all.
// With http2_max_concurrent_streams 4 the streams beyond 4 are refused
// and 4 handlers run.
func TestHTTP2StreamsHoldUpstream(t *testing.T) {
	for _, max := range []int{DefaultMaxConcurrentStreams, 4} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			up := newHeldUpstream(t)
			o := testOptions(t, up.URL, false)
			o.HTTP2, o.MaxConcurrentStreams = true, max
			p, addr := startProxy(t, o)
			c, err := loadgen.DialH2(context.Background(), loadgen.H2Options{Addr: addr, StreamWindow: 64 << 10, ConnWindow: 16 << 20, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var results []<-chan loadgen.H2Result
			for range 8 {
				results = append(results, c.Get("/large", loadgen.H2Read{Stall: time.Minute}))
			}
			want := min(8, max)
			ended := map[int]loadgen.H2Result{} // streams that ended while the others are held
			poll := func() {
				for i, ch := range results {
					if _, done := ended[i]; !done {
						select {
						case r := <-ch:
							ended[i] = r
						default:
						}
					}
				}
			}
			slowlabtest.WaitFor(t, fmt.Sprintf("%d upstream handlers running", want), func() bool {
				poll()
				return up.running.Load() == int64(want) && testutil.ToFloat64(p.m.http2Streams) == float64(want) && len(ended) == 8-want
			}, func() string {
				return fmt.Sprintf("%d handlers, the proxy's HTTP/2 streams %v; ended: %+v", up.running.Load(), testutil.ToFloat64(p.m.http2Streams), ended)
			})
			for _, r := range ended {
				if r.Err == nil || !strings.Contains(r.Err.Error(), "reset the stream") {
					t.Errorf("stream %d ended while the others were held: %+v, want it refused", r.StreamID, r)
				}
			}
			c.Close()
			for i, ch := range results {
				if _, done := ended[i]; !done {
					<-ch
				}
			}
			slowlabtest.WaitFor(t, "every upstream handler ended with the client connection", func() bool { return up.running.Load() == 0 },
				func() string { return fmt.Sprintf("%d handlers", up.running.Load()) })
		})
	}
}

// Under TLS the proxy speaks h2 (ALPN) and HTTP/1.1 on the same
// listener; without HTTP2 an HTTP/2 client is refused as one.
func TestHTTP2OverTLS(t *testing.T) {
	up := newAppServer(t, testBody(1<<20))
	cert := httptest.NewTLSServer(http.NotFoundHandler()) // its certificate, for 127.0.0.1 and example.com
	cert.Close()
	roots := x509.NewCertPool()
	roots.AddCert(cert.Certificate())
	clientTLS := &tls.Config{RootCAs: roots, ServerName: "example.com"}
	for _, h2 := range []bool{true, false} {
		o := testOptions(t, up.URL, true)
		o.HTTP2, o.TLS = h2, cert.TLS
		_, addr := startProxy(t, o)
		c, err := loadgen.DialH2(context.Background(), loadgen.H2Options{Addr: addr, TLS: clientTLS, StreamWindow: loadgen.H2DefaultWindow,
			ConnWindow: loadgen.H2DefaultWindow, Timeout: time.Minute})
		if !h2 {
			if err == nil || !strings.Contains(err.Error(), "does not speak HTTP/2 over TLS") {
				t.Errorf("HTTP2 off: %v, want the HTTP/2 client refused", err)
			}
		} else if err != nil {
			t.Fatal(err)
		} else {
			if r := <-c.Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 1<<20 {
				t.Errorf("h2: %+v, want the whole 1 MiB", r)
			}
			c.Close()
		}
		hc := &http.Client{Timeout: slowlabtest.HangGuard, Transport: &http.Transport{TLSClientConfig: clientTLS}}
		resp, err := hc.Get("https://" + addr + "/large")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		hc.CloseIdleConnections()
		if resp.ProtoMajor != 1 || resp.StatusCode != 200 || n != 1<<20 {
			t.Errorf("HTTP2 %t: an HTTP/1.1 client got %s %d with %d bytes", h2, resp.Proto, resp.StatusCode, n)
		}
	}
}

// send_timeout holds per HTTP/2 stream, as in NGINX: a stream stalled
// with its window closed is reset no earlier than SendTimeout after it
// was opened, its upstream handler ends (the app's worker is free), and
// the connection carries another stream meanwhile. The connection-level
// timeout alone cannot see it: the connection keeps moving.
func TestHTTP2StreamSendTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	up := newHeldUpstream(t)
	o := testOptions(t, up.URL, false)
	o.HTTP2, o.SendTimeout = true, 500*time.Millisecond
	p, addr := startProxy(t, o)
	// The client gives up after 10 s, so a proxy that never resets the
	// stream fails the test rather than hanging it.
	c, err := loadgen.DialH2(context.Background(), loadgen.H2Options{Addr: addr, StreamWindow: 64 << 10, ConnWindow: 16 << 20, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	stalled := c.Get("/large", loadgen.H2Read{Stall: time.Minute})
	slowlabtest.WaitFor(t, "the stalled stream's upstream handler running", func() bool { return up.running.Load() == 1 })
	r := <-stalled
	if took := time.Since(start); r.Err == nil || !strings.Contains(r.Err.Error(), "reset the stream") || took < o.SendTimeout {
		t.Fatalf("stalled stream: %+v after %v, want reset by the proxy no earlier than %v", r, took, o.SendTimeout)
	}
	slowlabtest.WaitFor(t, "the upstream handler ended", func() bool { return up.running.Load() == 0 },
		func() string { return fmt.Sprintf("%d handlers", up.running.Load()) })
	// The proxy counts the disconnect as its handler returns, which can
	// be after the upstream's ended: wait for the count, then check it.
	slowlabtest.WaitFor(t, "the timed-out stream counted", func() bool { return testutil.ToFloat64(p.m.clientDisconnects) > 0 })
	if n := testutil.ToFloat64(p.m.clientDisconnects); n != 1 {
		t.Errorf("client disconnects %v, want the timed-out stream's 1", n)
	}
}
