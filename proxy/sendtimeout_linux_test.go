package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// stallClient sends GET path with a small receive buffer and reads
// nothing, so the proxy's writes to it stop making progress.
func stallClient(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	return conn
}

// drain reads what conn still delivers: the response's status, how many
// body bytes and the error that ended it (nil for EOF).
func drain(t *testing.T, conn net.Conn) (int, int64, int64, error) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, resp.ContentLength, err
}

// TestProxySendTimeout: a client that stops reading is closed SendTimeout
// after the proxy's last write made progress, with buffering on (the body
// waits in memory and a temp file, sent with sendfile) and off; what it
// reads afterwards is a truncated body.
func TestProxySendTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it waits out a proxy timeout")
	const timeout = time.Second
	for _, buffering := range []bool{true, false} {
		t.Run(fmt.Sprintf("buffering=%v", buffering), func(t *testing.T) {
			body := testBody(8 << 20)
			app := newAppServerOn(t, body, listen(t, smallSndbuf))
			o := testOptions(t, app.URL, buffering)
			o.SendTimeout = timeout
			p, addr := startProxyOn(t, o, listen(t, smallSndbuf))
			// start precedes the request, so the proxy's timer (which
			// starts after its last write made progress, after the
			// request) cannot start before it.
			start := time.Now()
			conn := stallClient(t, addr, "/large")
			eventually(t, "the stalled client closed", func() bool { return testutil.ToFloat64(p.m.clientDisconnects) == 1 })
			took := time.Since(start)
			// The proxy's buffers fill within milliseconds; then nothing
			// moves for the timeout.
			// The lower bound is firm (the timer cannot start before
			// the request); the upper one only tells the timeout from
			// the test's hang guard on a loaded machine.
			if took < timeout || took > timeout+10*time.Second {
				t.Errorf("closed %v after the request, want about %v", took, timeout)
			}
			status, n, cl, err := drain(t, conn)
			if status != 200 || err != io.ErrUnexpectedEOF || n >= cl || cl != int64(len(body)) {
				t.Errorf("status %d, %d of %d bytes, %v: want 200 cut short (EOF before Content-Length)", status, n, cl, err)
			}
			t.Logf("closed after %v; the client then read %d of %d bytes", took, n, cl)
		})
	}
}

// TestProxySendTimeoutSlowReader: a reader slower than the whole response
// takes but never silent for SendTimeout gets the whole body, the temp
// file part through sendfile.
func TestProxySendTimeoutSlowReader(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it waits out a proxy timeout")
	body := testBody(1 << 20)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, true)
	o.SendTimeout = time.Second
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))
	// 1 MiB at 512 KiB/s: 2 s, twice the timeout.
	res := slowClient{rate: 512 << 10, rcvbuf: 8 << 10}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	if v := testutil.ToFloat64(p.m.clientDisconnects); v != 0 {
		t.Errorf("client disconnects %v, want 0", v)
	}
	if v := testutil.ToFloat64(p.m.spooledBytes); v == 0 {
		t.Error("nothing spooled: the temp file path was not exercised")
	}
}
