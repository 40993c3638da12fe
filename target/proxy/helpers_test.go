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
	"testing"
	"time"
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
}

type sendDone struct {
	took time.Duration // handler start to return: the app's send time
	err  error         // from writing the body
}

func newAppServer(t testing.TB, body []byte) *appServer {
	return newAppServerOn(t, body, listen(t, 0))
}

func newAppServerOn(t testing.TB, body []byte, ln net.Listener) *appServer {
	a := &appServer{body: body, sent: make(chan sendDone, 16)}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.Listener.Close()
	a.Listener = ln
	a.Start()
	t.Cleanup(a.Close)
	return a
}

func (a *appServer) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
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
	case a.sent <- sendDone{took: time.Since(start), err: err}:
	default:
	}
}

func (a *appServer) addr() string { return strings.TrimPrefix(a.URL, "http://") }

// waitSent returns the next response's send report.
func (a *appServer) waitSent(t testing.TB) sendDone {
	t.Helper()
	select {
	case d := <-a.sent:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("upstream handler did not return")
		return sendDone{}
	}
}

// get fetches url with a fresh client and returns status, header and body.
func get(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
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

// eventually polls cond every 5 ms for up to 5 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settledGoroutines waits until runtime.NumGoroutine stops changing and
// returns it: goroutines started just before (Serve's) get to run first.
func settledGoroutines() int {
	n, same := runtime.NumGoroutine(), 0
	for same < 5 {
		time.Sleep(10 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}
