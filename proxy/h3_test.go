package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/runcert"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// h3Options are o serving HTTP/3 (and TLS) on a certificate made for
// 127.0.0.1, and the client configuration that trusts it.
func h3Options(t *testing.T, o Options) (Options, *tls.Config) {
	t.Helper()
	cert, err := runcert.New("proxy h3 test", netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	o.HTTP2, o.HTTP3, o.TLS = true, true, &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	return o, &tls.Config{RootCAs: cert.Pool}
}

func dialH3(t *testing.T, addr string, roots *tls.Config, timeout time.Duration) *loadgen.H3Conn {
	t.Helper()
	c, err := loadgen.DialH3(context.Background(), loadgen.H3Options{Addr: addr, TLS: roots, StreamWindow: 64 << 10, ConnWindow: 16 << 20, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The proxy serves HTTP/3 on the UDP port of its TLS listener: a whole
// response over HTTP/3, and over HTTP/2 on the TCP port beside it.
func TestHTTP3ServesBesideTLS(t *testing.T) {
	up := newAppServer(t, testBody(1<<20))
	o, roots := h3Options(t, testOptions(t, up.URL, true))
	_, addr := startProxy(t, o)
	c := dialH3(t, addr, roots, time.Minute)
	if r := <-c.Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 1<<20 {
		t.Errorf("h3: %+v, want the whole 1 MiB", r)
	}
	h2, err := loadgen.DialH2(context.Background(), loadgen.H2Options{Addr: addr, TLS: roots, StreamWindow: loadgen.H2DefaultWindow,
		ConnWindow: loadgen.H2DefaultWindow, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if r := <-h2.Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 1<<20 {
		t.Errorf("h2 beside it: %+v, want the whole 1 MiB", r)
	}
}

// One HTTP/3 connection to the proxy (buffering off) holds one upstream
// connection, and so one app worker, per stream: 8 stalled streams are 8
// handlers running at once, and closing the connection frees them all.
func TestHTTP3StreamsHoldUpstream(t *testing.T) {
	up := newHeldUpstream(t)
	o, roots := h3Options(t, testOptions(t, up.URL, false))
	_, addr := startProxy(t, o)
	c, err := loadgen.DialH3(context.Background(), loadgen.H3Options{Addr: addr, TLS: roots, StreamWindow: 64 << 10, ConnWindow: 16 << 20, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var results []<-chan loadgen.H2Result
	for range 8 {
		results = append(results, c.Get("/large", loadgen.H2Read{Stall: time.Minute}))
	}
	slowlabtest.WaitFor(t, "8 upstream handlers running", func() bool { return up.running.Load() == 8 },
		func() string { return fmt.Sprintf("%d handlers", up.running.Load()) })
	c.Close()
	for _, ch := range results {
		if r := <-ch; r.Err == nil || r.Complete {
			t.Errorf("%+v: want the stream ended with its connection", r)
		}
	}
	slowlabtest.WaitFor(t, "every upstream handler ended with the client connection", func() bool { return up.running.Load() == 0 },
		func() string { return fmt.Sprintf("%d handlers", up.running.Load()) })
}

// send_timeout holds per HTTP/3 stream, as per HTTP/2 stream: a stream
// stalled with its window closed is reset no earlier than SendTimeout
// after it was opened, and its upstream handler ends.
func TestHTTP3StreamSendTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	up := newHeldUpstream(t)
	o, roots := h3Options(t, testOptions(t, up.URL, false))
	o.SendTimeout = 500 * time.Millisecond
	p, addr := startProxy(t, o)
	// The client gives up after 10 s: a proxy that never resets the
	// stream fails the test rather than hanging it.
	c := dialH3(t, addr, roots, 10*time.Second)
	start := time.Now()
	stalled := c.Get("/large", loadgen.H2Read{Stall: time.Minute})
	slowlabtest.WaitFor(t, "the stalled stream's upstream handler running", func() bool { return up.running.Load() == 1 })
	r := <-stalled
	var reset loadgen.H3ResetError
	if took := time.Since(start); !errors.As(r.Err, &reset) || took < o.SendTimeout {
		t.Fatalf("stalled stream: %+v after %v, want reset by the proxy no earlier than %v", r, took, o.SendTimeout)
	}
	slowlabtest.WaitFor(t, "the upstream handler ended", func() bool { return up.running.Load() == 0 },
		func() string { return fmt.Sprintf("%d handlers", up.running.Load()) })
	if n := testutil.ToFloat64(p.m.clientDisconnects); n != 1 {
		t.Errorf("client disconnects %v, want the timed-out stream's 1", n)
	}
}

// HTTP/3 without TLS is refused, naming the field.
func TestHTTP3NeedsTLS(t *testing.T) {
	o := testOptions(t, "127.0.0.1:1", false)
	o.HTTP3 = true
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "HTTP3") || !strings.Contains(err.Error(), "QUIC is always TLS") {
		t.Errorf("Validate: %v, want HTTP3 refused without TLS", err)
	}
}
