package loadgen

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// endlessServer serves every connection on a loopback listener: it reads
// the request's header, writes head and then body over and over until a
// write fails (the client closed the connection), and reports on done.
// A client that reads on without a bound is stopped by an event, not a
// clock: once the server wrote stopAfter bytes on a connection it calls
// stop, which cancels the client's request.
type endlessServer struct {
	url  string
	done chan int64 // bytes written on each connection, when it ended
}

// stopAfter is far above what a bounded client lets the server write
// (MaxResponseHeaderBytes and the loopback socket buffers: 3.7 MiB
// measured).
const stopAfter = 64 << 20

func newEndlessServer(t *testing.T, head, body string, stop func()) *endlessServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &endlessServer{url: "http://" + ln.Addr().String() + "/", done: make(chan int64, 4)}
	chunk := []byte(strings.Repeat(body, max(1, 64<<10/len(body))))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, head, chunk, stop)
		}
	}()
	return s
}

func (s *endlessServer) serve(c net.Conn, head string, chunk []byte, stop func()) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			s.done <- 0
			return
		}
		if line == "\r\n" {
			break
		}
	}
	n, err := c.Write([]byte(head))
	written := int64(n)
	for stopped := false; err == nil; {
		n, err = c.Write(chunk)
		written += int64(n)
		if written > stopAfter && !stopped {
			stop()
			stopped = true
		}
	}
	s.done <- written
}

// endlessGet sends one GET to a server that writes head and body for ever
// with the lean client or net/http's, and returns its result, the bytes
// the process allocated meanwhile and the bytes the server wrote.
func endlessGet(t *testing.T, lean bool, head, body string) (r Result, alloc uint64, written int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newEndlessServer(t, head, body, cancel)
	c := NewClient(ClientOptions{Lean: lean, Timeout: 5 * time.Minute}) // ended by the bound (or stop), not the clock
	defer c.Close()
	if got := c.lean != nil && c.lean.target(srv.url) != nil; got != lean {
		t.Fatalf("lean handles %s: %v, want %v", srv.url, got, lean)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c.Get(ctx, srv.url, &r)
	written = <-srv.done // the server saw the client close
	runtime.ReadMemStats(&after)
	return r, after.TotalAlloc - before.TotalAlloc, written
}

// A server that answers with an endless header, or with 1xx responses for
// ever, fails the request with header_too_large in both clients once the
// header took MaxResponseHeaderBytes, with the memory the request
// allocated bounded: the server writes until the client closes its
// connection.
func TestEndlessHeaderBounded(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct {
		name, head, body string
		maxAlloc         uint64 // bytes the request may allocate
	}{
		// 1.1 MiB measured: the header's lines, kept until it fails
		{"endless header", "HTTP/1.1 200 OK\r\n", "X-Endless: " + strings.Repeat("a", 1000) + "\r\n", 4 << 20},
		// 8.7 MiB measured: net/http's ReadResponse (lean's too, for a
		// 1xx) allocates some 216 bytes for each of the 41,943 responses
		// that fit in the bound, garbage as soon as the next is read
		{"endless 1xx", "", continue1xx, 16 << 20},
	} {
		for _, lean := range []bool{true, false} {
			r, alloc, written := endlessGet(t, lean, tc.head, tc.body)
			t.Logf("%s, lean %v: %v (%s), allocated %.1f MiB, server wrote %.1f MiB", tc.name, lean, r.Err, ErrorReason(r.Err),
				float64(alloc)/(1<<20), float64(written)/(1<<20))
			if ErrorReason(r.Err) != "header_too_large" || r.Status != 0 {
				t.Errorf("%s, lean %v: status %d, err %v (%s), want header_too_large", tc.name, lean, r.Status, r.Err, ErrorReason(r.Err))
			}
			if alloc > tc.maxAlloc {
				t.Errorf("%s, lean %v: the request allocated %d bytes, want at most %d", tc.name, lean, alloc, tc.maxAlloc)
			}
		}
	}
}
