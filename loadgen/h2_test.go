package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// h2Server is a cleartext HTTP/2 server (prior knowledge) on loopback
// whose /large?size=N writes N bytes in 16 KiB flushed writes and reports
// when its handler's first write got out and when it returned, or, when a
// write failed, why: a test waits for one or the other, so a stream that
// failed ends the test instead of hanging it.
type h2Server struct {
	addr                 string
	firstOut, handlerOut chan time.Time
	failed               chan error
	conns                atomic.Int64 // connections accepted
}

// first waits for a handler's first write to get out.
func (s *h2Server) first(t *testing.T) time.Time { t.Helper(); return s.wait(t, s.firstOut) }

// returned waits for a handler to return after writing its whole body.
func (s *h2Server) returned(t *testing.T) time.Time { t.Helper(); return s.wait(t, s.handlerOut) }

// wait takes the next time on ch, or fails the test on a handler's
// failure.
func (s *h2Server) wait(t *testing.T, ch chan time.Time) time.Time {
	t.Helper()
	select {
	case at := <-ch:
		return at
	case err := <-s.failed:
		t.Fatalf("a /large handler failed: %v", err)
	}
	return time.Time{}
}

// newLargeServer is an h2Server's (or h3Server's) handler state, its
// address still to be set.
func newLargeServer() *h2Server {
	return &h2Server{firstOut: make(chan time.Time, 256), handlerOut: make(chan time.Time, 256), failed: make(chan error, 256)}
}

// mux serves /large?size=N as the type says, and /fast: 1 KiB at once.
func (s *h2Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("size"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		chunk := make([]byte, 16<<10)
		for sent := 0; sent < n; {
			k := min(len(chunk), n-sent)
			if _, err := w.Write(chunk[:k]); err != nil {
				s.failed <- fmt.Errorf("%s: write at byte %d: %w", r.URL, sent, err)
				return
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				s.failed <- fmt.Errorf("%s: flush at byte %d: %w", r.URL, sent, err)
				return
			}
			if sent == 0 {
				s.firstOut <- time.Now()
			}
			sent += k
		}
		s.handlerOut <- time.Now()
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("f", 1024))) })
	return mux
}

func startH2Server(t *testing.T) *h2Server {
	t.Helper()
	s := newLargeServer()
	mux := s.mux()
	srv := &http.Server{Handler: mux, Protocols: new(http.Protocols), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

func dialH2(t *testing.T, addr string, stream, conn uint32) *H2Conn {
	t.Helper()
	c, err := DialH2(context.Background(), H2Options{Addr: addr, StreamWindow: stream, ConnWindow: conn, Timeout: time.Minute})
	return closedAtEnd(t, c, err)
}

// closedAtEnd is a connection dialed (or the test fails with err),
// closed when the test ends.
func closedAtEnd[C interface{ Close() error }](t *testing.T, c C, err error) C {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A paced HTTP/2 reader holds the server's handler by flow control alone
// (its socket is read as fast as frames come): 1 MiB read at 1 MiB/s with
// a 64 KiB stream window takes at least (1 MiB - 64 KiB) / rate, and the
// handler cannot return before the reader granted all but what the window
// and the server's own write buffer hold.
func TestH2PacedStreamHoldsHandler(t *testing.T) {
	t.Parallel() // it waits for its pacing, and its bounds are lower ones, which load only lengthens
	srv := startH2Server(t)
	c := dialH2(t, srv.addr, 64<<10, 16<<20)
	const size, rate, window = 1 << 20, 1 << 20, 64 << 10
	start := time.Now()
	r := <-c.Get("/large?size="+strconv.Itoa(size), H2Read{Rate: rate})
	if r.Err != nil || !r.Complete || r.Bytes != size || r.Status != 200 {
		t.Fatalf("%+v: want the whole 1 MiB, status 200", r)
	}
	if min := time.Duration(float64(size-window) / rate * float64(time.Second)); r.Total < min {
		t.Errorf("paced at %d B/s: took %v, want at least %v", rate, r.Total, min)
	}
	// The server may hold its 16 KiB write and a frame or so beyond the
	// window: 64 KiB of slack more.
	if out, min := srv.returned(t).Sub(start), time.Duration(float64(size-2*window)/rate*float64(time.Second)); out < min {
		t.Errorf("the handler returned %v after the request, want at least %v: flow control did not hold it", out, min)
	}
}

// A zero stream window lets the server send no body byte: a reader that
// stalls from its first byte for 300 ms gets its first DATA only once it
// resumed and granted room, and the whole body then.
func TestH2ZeroWindowStall(t *testing.T) {
	srv := startH2Server(t)
	c := dialH2(t, srv.addr, 0, 16<<20)
	r := <-c.Get("/large?size=65536", H2Read{Stall: 300 * time.Millisecond})
	checkStalled(t, r, 65536, srv.first, "the server's first write got out")
}

// checkStalled: r read size bytes whole after a 300 ms stall, and the
// server's event (its handler's first write out, its return) did not
// come before the reader resumed.
func checkStalled(t *testing.T, r H2Result, size int64, event func(*testing.T) time.Time, what string) {
	t.Helper()
	if r.Err != nil || !r.Complete || r.Bytes != size {
		t.Fatalf("%+v: want the whole body after the stall", r)
	}
	if r.Stalled.IsZero() || r.Resumed.Sub(r.Stalled) < 300*time.Millisecond {
		t.Errorf("stalled %v, resumed %v: want a 300 ms stall", r.Stalled, r.Resumed)
	}
	if at := event(t); at.Before(r.Resumed) {
		t.Errorf("%s %v before the reader resumed: the window did not hold it", what, r.Resumed.Sub(at))
	}
}

// Streams share the connection's window: with it at the protocol's 64 KiB
// minimum, four stalled readers' unread bytes fill it, and a small
// response on the same connection cannot arrive before a stalled reader
// resumes; with a 16 MiB connection window it arrives while they stall.
func TestH2StreamsShareConnectionWindow(t *testing.T) {
	slowlabtest.EndToEnd(t, "it paces streams for seconds")
	checkConnectionWindowShared(t, H2DefaultWindow, func(conn uint64) (*h2Server, func(string, H2Read) <-chan H2Result) {
		srv := startH2Server(t)
		return srv, dialH2(t, srv.addr, 64<<10, uint32(conn)).Get
	})
}

// checkConnectionWindowShared: on a connection of dial's with a window of
// small, four stalled readers' unread bytes fill it and /fast on it
// cannot arrive before a stalled reader resumes; with 16 MiB it arrives
// while they stall.
func checkConnectionWindowShared(t *testing.T, small uint64, dial func(conn uint64) (*h2Server, func(string, H2Read) <-chan H2Result)) {
	t.Helper()
	for _, tc := range []struct {
		conn    uint64
		blocked bool
	}{{small, true}, {16 << 20, false}} {
		srv, get := dial(tc.conn)
		var slow []<-chan H2Result
		for range 4 {
			slow = append(slow, get("/large?size=262144", H2Read{Stall: 2 * time.Second}))
		}
		for range slow { // each stalled reader's handler got its first write out
			srv.first(t)
		}
		fast := <-get("/fast", H2Read{})
		if fast.Err != nil || !fast.Complete {
			t.Fatalf("connection window %d: fast %+v", tc.conn, fast)
		}
		fastEnd := fast.Start.Add(fast.Total)
		resumed := time.Time{}
		for _, ch := range slow {
			r := <-ch
			if r.Err != nil || !r.Complete {
				t.Fatalf("connection window %d: slow %+v", tc.conn, r)
			}
			if resumed.IsZero() || r.Resumed.Before(resumed) {
				resumed = r.Resumed
			}
		}
		if got := !fastEnd.Before(resumed); got != tc.blocked {
			t.Errorf("connection window %d: /fast ended %v after the first stalled reader resumed (negative: before), want blocked %t",
				tc.conn, fastEnd.Sub(resumed), tc.blocked)
		}
	}
}

// Over TLS the connection negotiates h2 by ALPN; a server that only
// speaks HTTP/1.1 over TLS is refused as one (Go's refuses the handshake;
// one that ignores ALPN negotiates nothing, also refused).
func TestH2OverTLS(t *testing.T) {
	for _, h2 := range []bool{true, false} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(r.Proto)) }))
		srv.EnableHTTP2 = h2
		srv.StartTLS()
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		c, err := DialH2(context.Background(), H2Options{Addr: srv.Listener.Addr().String(), TLS: &tls.Config{RootCAs: roots, ServerName: "example.com"},
			StreamWindow: H2DefaultWindow, ConnWindow: H2DefaultWindow, Timeout: time.Minute})
		if !h2 {
			if err == nil || !strings.Contains(err.Error(), "does not speak HTTP/2 over TLS") {
				t.Errorf("an HTTP/1.1-only TLS server: %v, want it refused as one", err)
			}
			if c != nil {
				c.Close()
			}
			srv.Close()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r := <-c.Get("/", H2Read{}); r.Err != nil || !r.Complete || r.Bytes != int64(len("HTTP/2.0")) {
			t.Errorf("%+v, want the HTTP/2.0 the server saw", r)
		}
		c.Close()
		srv.Close()
	}
}

// Windows out of the protocol's range are refused before connecting, and
// a paced reader on a zero window (it would never be sent a byte) is
// refused with its stream.
func TestH2RefusesWindows(t *testing.T) {
	for _, o := range []H2Options{{ConnWindow: 1000}, {ConnWindow: H2DefaultWindow, StreamWindow: 1 << 31}, {ConnWindow: 1 << 31}} {
		if _, err := DialH2(context.Background(), o); err == nil || !strings.Contains(err.Error(), "http/2 windows") {
			t.Errorf("%+v: %v, want the windows refused", o, err)
		}
	}
	srv := startH2Server(t)
	c := dialH2(t, srv.addr, 0, H2DefaultWindow)
	if r := <-c.Get("/fast", H2Read{Rate: 1000}); r.Err == nil || !strings.Contains(r.Err.Error(), "needs a stream window above 0") {
		t.Errorf("paced on a zero window: %v", r.Err)
	}
	if r := <-c.Get("/fast", H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 1024 {
		t.Errorf("an immediate reader on a zero window opens it: %+v", r)
	}
}

// An open loop over one HTTP/2 connection: every hit is a stream on it,
// on schedule, measured as the HTTP/1.1 client's are (status, bytes,
// latency), and the server sees one connection.
func TestOpenLoopOverH2(t *testing.T) {
	srv := startH2Server(t)
	c := dialH2(t, srv.addr, H2DefaultWindow, 16<<20)
	pacer, err := RatePacer(500, 100*time.Millisecond) // checkStreamHits' 50 hits
	if err != nil {
		t.Fatal(err)
	}
	o := &OpenLoop{H2: c, URL: "http://" + srv.addr + "/fast?x=1", Pacer: pacer, Start: time.Now(), RunID: "h2", Metrics: NewMetrics(prometheus.NewRegistry())}
	// Each a stream of its own (client streams are odd), all on the one
	// connection.
	checkStreamHits(t, o.Run(context.Background()), ProtoHTTP2, c.LocalAddr(), 2, 1)
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("the server saw %d connections, want the one", n)
	}
}

// checkStreamHits: 50 hits of an open loop over one connection (conn),
// each measured as the HTTP/1.1 client's are (status, 1 KiB, latency)
// and a stream of its own in proto, its ID stream%mod == rem (a
// client's).
func checkStreamHits(t *testing.T, res []Result, proto string, conn netip.AddrPort, mod, rem uint32) {
	t.Helper()
	if len(res) != 50 {
		t.Fatalf("%d results, want 50", len(res))
	}
	streams := map[uint32]bool{}
	for _, r := range res {
		if r.Err != nil || r.Status != 200 || r.Bytes != 1024 || !r.Scheduled || r.NewConn || r.Latency <= 0 || r.TTFB > r.Latency {
			t.Errorf("hit %d: %+v", r.Seq, r)
		}
		if r.Proto != proto || r.Conn != conn || !r.Conn.IsValid() || r.Stream%mod != rem || streams[r.Stream] {
			t.Errorf("hit %d: proto %q, conn %v (the connection's %v), stream %d (seen: %v)", r.Seq, r.Proto, r.Conn, conn, r.Stream, streams[r.Stream])
		}
		streams[r.Stream] = true
	}
}

// A reader that gives up at H2Read.Until resets its stream then: the
// result says ErrH2Cut no earlier than Until, the server's handler sees
// its stream end (its write fails), and the connection carries other
// streams on.
func TestH2ReaderCutsStream(t *testing.T) {
	slowlabtest.Timing(t)
	srv := startH2Server(t)
	c := dialH2(t, srv.addr, 64<<10, 16<<20)
	checkCut(t, srv, c.Get, ErrH2Cut)
}

// checkCut: a stalled reader of 8 MiB that gives up 200 ms on (Until)
// ends with errCut no earlier, the server's handler sees its stream end
// (its write fails), and the connection (get) carries /fast on.
func checkCut(t *testing.T, srv *h2Server, get func(string, H2Read) <-chan H2Result, errCut error) {
	t.Helper()
	until := time.Now().Add(200 * time.Millisecond)
	r := <-get("/large?size="+strconv.Itoa(8<<20), H2Read{Stall: time.Minute, Until: until})
	if !errors.Is(r.Err, errCut) || r.Complete {
		t.Fatalf("%+v: want the stream cut by its reader", r)
	}
	if now := time.Now(); now.Before(until) {
		t.Errorf("cut %v before Until", until.Sub(now))
	}
	select {
	case err := <-srv.failed:
		t.Logf("the handler saw: %v", err)
	case at := <-srv.handlerOut:
		t.Fatalf("the handler wrote all 8 MiB (at %v) to a stream its reader cut", at)
	}
	if r := <-get("/fast", H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 1024 {
		t.Errorf("/fast after the cut: %+v", r)
	}
}
