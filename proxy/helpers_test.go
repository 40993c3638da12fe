package proxy

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// testBody is n deterministic pseudo-random bytes, so a shifted or
// repeated block cannot pass for the right one.
func testBody(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{'s', 'l', 'o', 'w'})
	r.Read(b)
	return b
}

// testOptions are the defaults pointed at upstream, with a private TempDir.
func testOptions(t testing.TB, upstream string, buffering bool) Options {
	o := DefaultOptions()
	o.Upstream = strings.TrimPrefix(upstream, "http://")
	o.Buffering = buffering
	o.TempDir = t.TempDir()
	o.ShutdownTimeout = 2 * time.Second
	return o
}

// startProxy serves a new Proxy on a loopback port until the test ends.
func startProxy(t testing.TB, o Options) (*Proxy, string) {
	return startProxyOn(t, o, listen(t, 0))
}

// listen opens a loopback listener; sndbuf > 0 fixes SO_SNDBUF on every
// accepted connection (no autotuning), so a test can see what a server
// itself buffers rather than what loopback's multi-MiB socket buffers hold.
func listen(t testing.TB, sndbuf int) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if sndbuf > 0 {
		return sndbufListener{ln, sndbuf}
	}
	return ln
}

type sndbufListener struct {
	net.Listener
	size int
}

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(l.size)
	}
	return c, err
}

// smallSndbuf is the SO_SNDBUF the slow-client tests give the app's and the
// proxy's client sockets.
const smallSndbuf = 32 << 10

func startProxyOn(t testing.TB, o Options, ln net.Listener) (*Proxy, string) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return p, ln.Addr().String()
}

// appServer is an upstream that serves body on every path, in 64 KiB
// writes like the lab app, and reports when each handler returned.
type appServer struct {
	*httptest.Server
	body    []byte
	chunked bool          // omit Content-Length
	sent    chan sendDone // one per response, buffered

	mu   sync.Mutex
	conn net.Conn // the connection last accepted
}

type sendDone struct {
	err error // from writing the body
}

func newAppServer(t testing.TB, body []byte) *appServer {
	return newAppServerOn(t, body, listen(t, 0))
}

func newAppServerOn(t testing.TB, body []byte, ln net.Listener) *appServer {
	a := &appServer{body: body, sent: make(chan sendDone, 16)}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.Listener.Close()
	a.Listener = ln
	a.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			a.mu.Lock()
			a.conn = c
			a.mu.Unlock()
		}
	}
	a.Start()
	t.Cleanup(a.Close)
	return a
}

func (a *appServer) serve(w http.ResponseWriter, r *http.Request) {
	if !a.chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Server-Timing", "app;dur=1")
	var err error
	for off := 0; off < len(a.body) && err == nil; off += 64 << 10 {
		_, err = w.Write(a.body[off:min(off+64<<10, len(a.body))])
		if a.chunked {
			http.NewResponseController(w).Flush()
		}
	}
	select {
	case a.sent <- sendDone{err: err}:
	default:
	}
}

// lastConn returns the connection the app accepted last.
func (a *appServer) lastConn() net.Conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// waitSent returns the next response's send report.
func (a *appServer) waitSent(t testing.TB) sendDone {
	t.Helper()
	select {
	case d := <-a.sent:
		return d
	case <-time.After(slowlabtest.HangGuard):
		t.Fatal("upstream handler did not return")
		return sendDone{}
	}
}

// get fetches url with a fresh client and returns status, header and body.
func get(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	c := &http.Client{Timeout: slowlabtest.HangGuard, Transport: &http.Transport{DisableCompression: true}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

// eventually polls cond every 5 ms until it holds, failing after slowlabtest.HangGuard.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(slowlabtest.HangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting: %s", slowlabtest.HangGuard, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requestGoroutines returns the goroutines that may serve a request, by ID
// with their stacks: every connection of the proxy or of the app, and any
// goroutine running or started by code of this package, except the tests,
// Serve and the servers' accept loops.
func requestGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	const pkg = "slowlab/proxy."
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
		switch {
		case strings.Contains(g, pkg+"Test"), strings.Contains(g, pkg+"(*Proxy).Serve("), strings.Contains(g, pkg+"(*Proxy).Serve."),
			strings.Contains(g, "net/http.(*Server).Serve("): // the tests, Serve and the accept loops live on
		case strings.Contains(g, "net/http.(*conn).serve("), strings.Contains(g, pkg):
			out[id] = g
		}
	}
	return out
}
