package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/slowlab/slowlab/internal/runcert"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// h3Server is quic-go's HTTP/3 server on loopback UDP with an h2Server's
// handlers (/large, /fast) and /send-timeout?after=D: a response of 16
// MiB whose every write must get out within D, else the handler
// returns and the server resets the stream (a proxy's send_timeout). It
// remembers the client addresses it served (one a connection).
type h3Server struct {
	*h2Server
	roots *tls.Config // trusts the server's certificate
	mu    sync.Mutex
	peers map[string]bool
}

func startH3Server(t *testing.T) *h3Server {
	t.Helper()
	cert, err := runcert.New("h3 test", netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	s := &h3Server{h2Server: newLargeServer(), roots: &tls.Config{RootCAs: cert.Pool}, peers: map[string]bool{}}
	mux := s.mux()
	mux.HandleFunc("/send-timeout", func(w http.ResponseWriter, r *http.Request) {
		after, _ := time.ParseDuration(r.URL.Query().Get("after"))
		w.Header().Set("Content-Length", strconv.Itoa(16<<20))
		rc := http.NewResponseController(w)
		chunk := make([]byte, 16<<10)
		for sent := 0; sent < 16<<20; sent += len(chunk) {
			rc.SetWriteDeadline(time.Now().Add(after))
			if _, err := w.Write(chunk); err != nil {
				s.failed <- fmt.Errorf("%s: write at byte %d: %w", r.URL, sent, err)
				return
			}
		}
		s.handlerOut <- time.Now()
	})
	srv := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert.TLS}}),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.peers[r.RemoteAddr] = true
			s.mu.Unlock()
			mux.ServeHTTP(w, r)
		}), QUICConfig: &quic.Config{MaxIncomingStreams: 256}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(pc)
	t.Cleanup(func() { srv.Close(); pc.Close() })
	s.addr = pc.LocalAddr().String()
	return s
}

// connections is how many client connections the server served.
func (s *h3Server) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.peers)
}

func dialH3(t *testing.T, srv *h3Server, stream, conn uint64) *H3Conn {
	t.Helper()
	c, err := DialH3(context.Background(), H3Options{Addr: srv.addr, TLS: srv.roots, StreamWindow: stream, ConnWindow: conn, Timeout: time.Minute})
	return closedAtEnd(t, c, err)
}

// A paced HTTP/3 reader holds the server's handler by QUIC stream flow
// control: 1 MiB read at 1 MiB/s with a 64 KiB stream window takes at
// least size / rate, and the handler cannot return before the reader
// consumed all but what the window and the server's send buffers hold.
func TestH3PacedStreamHoldsHandler(t *testing.T) {
	t.Parallel() // it waits for its pacing, and its bounds are lower ones, which load only lengthens
	srv := startH3Server(t)
	c := dialH3(t, srv, 64<<10, 16<<20)
	const size, rate, window = 1 << 20, 1 << 20, 64 << 10
	r := <-c.Get("/large?size="+strconv.Itoa(size), H2Read{Rate: rate})
	if r.Err != nil || !r.Complete || r.Bytes != size || r.Status != 200 || r.StreamID%4 != 0 {
		t.Fatalf("%+v: want the whole 1 MiB, status 200, on a client bidirectional stream", r)
	}
	if min := time.Duration(float64(size) / rate * float64(time.Second)); r.Total < min {
		t.Errorf("read 1 MiB in %v at %d B/s, want at least %v", r.Total, rate, min)
	}
	respStart := r.Start.Add(r.FirstByte)
	returned := srv.returned(t)
	// What the reader had consumed when the handler returned is at most
	// rate × elapsed; the rest was in the window or the server's buffers.
	if unread := size - rate*returned.Sub(respStart).Seconds(); unread > 4*window {
		t.Errorf("the handler returned %v after the response began, %.0f bytes before the reader could have consumed them: "+
			"flow control did not hold it (window %d)", returned.Sub(respStart), unread, window)
	}
}

// A stalled reader reads nothing: the server's handler cannot finish
// before the reader resumes, then the body comes whole.
func TestH3StalledStreamHolds(t *testing.T) {
	srv := startH3Server(t)
	c := dialH3(t, srv, 16<<10, 16<<20)
	r := <-c.Get("/large?size="+strconv.Itoa(1<<20), H2Read{Stall: 300 * time.Millisecond})
	checkStalled(t, r, 1<<20, srv.returned, "the handler returned")
}

// A stalled reader sees the server reset its stream while it stalls (a
// proxy's send_timeout: a write that could not get out within 200 ms),
// not only when it would read again a minute later.
func TestH3StalledStreamSeesReset(t *testing.T) {
	srv := startH3Server(t)
	c := dialH3(t, srv, 16<<10, 16<<20)
	r := <-c.Get("/send-timeout?after=200ms", H2Read{Stall: time.Minute})
	var reset H3ResetError
	if !errors.As(r.Err, &reset) || r.Complete || r.Stalled.IsZero() || !r.Resumed.IsZero() {
		t.Fatalf("%+v: want the stream reset by the server during the stall", r)
	}
	if err := <-srv.failed; !strings.Contains(err.Error(), "deadline") {
		t.Errorf("the handler saw %v, want its write deadline", err)
	}
	t.Logf("reset %v (%v) after %v", reset.Code, r.Err, r.Total)
}

// Many streams share one QUIC connection: 32 paced streams each get
// their whole body on a stream of their own, and the server sees one
// client.
func TestH3ManyStreamsOneConnection(t *testing.T) {
	slowlabtest.EndToEnd(t, "it paces 32 streams for a second")
	srv := startH3Server(t)
	c := dialH3(t, srv, 64<<10, 16<<20)
	var chs []<-chan H2Result
	for range 32 {
		chs = append(chs, c.Get("/large?size="+strconv.Itoa(256<<10), H2Read{Rate: 256 << 10}))
	}
	ids := map[uint32]bool{}
	for _, ch := range chs {
		r := <-ch
		if r.Err != nil || !r.Complete || r.Bytes != 256<<10 || ids[r.StreamID] || r.StreamID%4 != 0 {
			t.Errorf("%+v: want the whole body on a stream of its own", r)
		}
		ids[r.StreamID] = true
	}
	if n := srv.connections(); n != 1 {
		t.Errorf("the server saw %d client connections, want the one", n)
	}
}

// Streams share the QUIC connection's window: with it at 64 KiB, four
// stalled readers' unread bytes fill it, and /fast on the same connection
// (its response HEADERS too: they are stream data in HTTP/3) cannot
// arrive before a stalled reader resumes; with 16 MiB it arrives while
// they stall.
func TestH3StreamsShareConnectionWindow(t *testing.T) {
	slowlabtest.EndToEnd(t, "it stalls streams for seconds")
	checkConnectionWindowShared(t, 64<<10, func(conn uint64) (*h2Server, func(string, H2Read) <-chan H2Result) {
		srv := startH3Server(t)
		return srv.h2Server, dialH3(t, srv, 64<<10, conn).Get
	})
}

// A reader that gives up at Until cancels its stream then: ErrH3Cut, the
// handler's write fails, and the connection carries other streams on.
func TestH3ReaderCutsStream(t *testing.T) {
	srv := startH3Server(t)
	c := dialH3(t, srv, 64<<10, 16<<20)
	checkCut(t, srv.h2Server, c.Get, ErrH3Cut)
}

// An open loop over one HTTP/3 connection: every hit a stream on it,
// measured as the other clients' are.
func TestOpenLoopOverH3(t *testing.T) {
	srv := startH3Server(t)
	c := dialH3(t, srv, 64<<10, 16<<20)
	pacer, err := RatePacer(500, 100*time.Millisecond) // checkStreamHits' 50 hits
	if err != nil {
		t.Fatal(err)
	}
	o := &OpenLoop{H3: c, URL: "https://" + srv.addr + "/fast?x=1", Pacer: pacer, Start: time.Now(), RunID: "h3", Metrics: NewMetrics(prometheus.NewRegistry())}
	// Client bidirectional streams are 0 mod 4.
	checkStreamHits(t, o.Run(context.Background()), ProtoHTTP3, c.LocalAddr(), 4, 0)
	if n := srv.connections(); n != 1 {
		t.Errorf("the server saw %d connections, want the one", n)
	}
}

// Bad options are refused before any packet is sent: windows out of
// range, no TLS, an address that is not loopback.
func TestH3RefusesOptions(t *testing.T) {
	roots := &tls.Config{}
	for _, tc := range []struct {
		o   H3Options
		err string
	}{
		{H3Options{Addr: "127.0.0.1:1", TLS: roots, StreamWindow: 100, ConnWindow: 1 << 20}, "http/3 windows: stream 100"},
		{H3Options{Addr: "127.0.0.1:1", TLS: roots, StreamWindow: 1 << 20, ConnWindow: 1 << 40}, "http/3 windows"},
		{H3Options{Addr: "127.0.0.1:1", StreamWindow: 1 << 20, ConnWindow: 1 << 20}, "no TLS configuration"},
		{H3Options{Addr: "192.0.2.1:443", TLS: roots, StreamWindow: 1 << 20, ConnWindow: 1 << 20}, "not a loopback address"},
		{H3Options{Addr: "no-port", TLS: roots, StreamWindow: 1 << 20, ConnWindow: 1 << 20}, `http/3 address "no-port"`},
	} {
		if _, err := DialH3(context.Background(), tc.o); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.err)
		}
	}
}

// A server whose certificate the client does not trust is refused in the
// handshake.
func TestH3UntrustedServer(t *testing.T) {
	srv := startH3Server(t)
	_, err := DialH3(context.Background(), H3Options{Addr: srv.addr, TLS: &tls.Config{}, StreamWindow: 1 << 16, ConnWindow: 1 << 20, Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("%v, want the certificate refused", err)
	}
}
