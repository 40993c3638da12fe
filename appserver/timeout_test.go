package appserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// readClosed reads c until the server ends the connection and returns what
// arrived and how it ended (nil: FIN).
func readClosed(t *testing.T, c net.Conn) ([]byte, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server never closed the connection (%d bytes read)", len(b))
	}
	return b, err
}

func timeoutServer(t *testing.T, model Model, workers int, timeout time.Duration) (*Server, string, *slowlabtest.SyncBuffer) {
	t.Helper()
	o := DefaultOptions()
	o.Model, o.Workers, o.WorkerTimeout = model, workers, timeout
	o.LargeSize = stuckSize
	log := &slowlabtest.SyncBuffer{}
	o.ErrorLog = log
	s, base, _ := startServer(t, o)
	return s, strings.TrimPrefix(base, "http://"), log
}

// A sync worker that gets a connection and no request is held until the
// timeout, then the connection is closed without a response and the worker
// serves again; a request finished in time is not counted.
func TestSyncWorkerTimeoutIdle(t *testing.T) {
	s, addr, log := timeoutServer(t, ModelSync, 1, 300*time.Millisecond)
	if err := getFast("http://"+addr, slowlabtest.HangGuard); err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// /fast queues behind the idle connection on the only worker: it is
	// answered only after the idle one was closed.
	fast := make(chan error, 1)
	var fastAt time.Time
	go func() { err := getFast("http://"+addr, slowlabtest.HangGuard); fastAt = time.Now(); fast <- err }()
	b, err := readClosed(t, idle)
	closedAt := time.Now()
	if err != nil || len(b) != 0 {
		t.Fatalf("idle connection: got %q, %v; want closed (FIN) with no response", b, err)
	}
	if err := <-fast; err != nil {
		t.Fatalf("/fast after the timeout freed the worker: %v", err)
	}
	if fastAt.Before(closedAt.Add(-50 * time.Millisecond)) {
		t.Errorf("/fast answered at %v, before the idle connection was closed at %v: the worker was not held", fastAt, closedAt)
	}
	if got := testutil.ToFloat64(s.timeout.total); got != 1 {
		t.Errorf("worker timeouts %v, want 1 (the /fast requests finished in time)", got)
	}
	if !strings.Contains(log.String(), WorkerTimeoutLog+" (worker:0") {
		t.Errorf("log %q: want a %s line", log, WorkerTimeoutLog)
	}
}

// A worker stuck writing to a client that does not read is aborted at the
// timeout: the client gets part of the body, then the end of the connection.
func TestSyncWorkerTimeoutWriting(t *testing.T) {
	s, addr, _ := timeoutServer(t, ModelSync, 1, 300*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
	slowlabtest.WaitFor(t, "the worker timed out", func() bool { return testutil.ToFloat64(s.timeout.total) == 1 })
	b, _ := readClosed(t, c)
	if len(b) == 0 || len(b) >= stuckSize {
		t.Fatalf("read %d bytes: want part of the %d-byte body, then the end", len(b), stuckSize)
	}
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 200")) {
		t.Fatalf("response starts %q", b[:min(len(b), 20)])
	}
}

// A slowloris client (a header one byte at a time, never finished) holds a
// sync worker until the timeout too: the timeout counts from accept, not
// from the last byte.
func TestSyncWorkerTimeoutSlowHeader(t *testing.T) {
	s, addr, _ := timeoutServer(t, ModelSync, 1, 400*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /fast HTTP/1.1\r\n")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for testutil.ToFloat64(s.timeout.total) == 0 {
		<-tick.C
		if _, err := c.Write([]byte("X")); err != nil {
			break // closed under us: the timeout fired
		}
	}
	b, _ := readClosed(t, c)
	if len(b) != 0 {
		t.Fatalf("got %q: want no response", b)
	}
}

func TestWorkerTimeoutValidate(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "worker timeout -1s: want 0 (none) up to 1h0m0s"},
		{2 * time.Hour, "worker timeout 2h0m0s: want 0 (none) up to 1h0m0s"},
	} {
		o := DefaultOptions()
		o.WorkerTimeout = tc.d
		if err := o.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %q", tc.d, err, tc.want)
		}
	}
}

// A gthread worker hands a connection to a thread on accept, as Gunicorn
// 20's does: connections that send nothing hold every thread, and /fast
// waits (queued) until they leave.
func TestGthreadIdleConnectionsHoldThreads(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.Workers, o.Threads = ModelGthread, 1, 2
	s, base, _ := startServer(t, o)
	addr := strings.TrimPrefix(base, "http://")
	queued := func(n int) func() bool {
		return func() bool { return int(gauges(s, "slowlab_target_queued_requests")[""]) == n }
	}
	// Three idle connections on two threads: whichever two took the
	// threads, the third waits for one.
	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	slowlabtest.WaitFor(t, "one idle connection queued", queued(1))
	fast := make(chan error, 1)
	go func() { fast <- getFast(base, slowlabtest.HangGuard) }()
	slowlabtest.WaitFor(t, "/fast queued behind the idle connections", queued(2))
	select {
	case err := <-fast:
		t.Fatalf("/fast answered (%v) while both threads were held by idle connections", err)
	default:
	}
	for _, c := range idle {
		c.Close()
	}
	if err := <-fast; err != nil {
		t.Fatalf("/fast after the idle connections left: %v", err)
	}
	slowlabtest.WaitFor(t, "nothing queued", queued(0))
}
