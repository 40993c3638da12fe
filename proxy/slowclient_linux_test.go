package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// slowClient downloads like the experiment's slow clients: SO_RCVBUF set
// before connecting, at most 16 KiB per read, reads paced to rate.
type slowClient struct {
	rate      float64 // bytes per second
	rcvbuf    int
	onConnect func(c net.Conn)   // once connected, before the request
	onBytes   func(n int64) bool // after each read; false hangs up
}

type slowResult struct {
	status int
	body   []byte
	err    error
}

func (c slowClient) get(t *testing.T, addr, path string) slowResult {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, c.rcvbuf)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if c.onConnect != nil {
		c.onConnect(conn)
	}
	start := time.Now()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	pr := &pacedReader{r: conn, rate: c.rate, start: start, onBytes: c.onBytes}
	resp, err := http.ReadResponse(bufio.NewReaderSize(pr, 16<<10), nil)
	if err != nil {
		return slowResult{err: err}
	}
	body, err := io.ReadAll(resp.Body)
	return slowResult{status: resp.StatusCode, body: body, err: err}
}

type pacedReader struct {
	r       io.Reader
	rate    float64
	start   time.Time
	n       int64
	onBytes func(int64) bool
}

var errHangUp = fmt.Errorf("client hung up")

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > 16<<10 {
		b = b[:16<<10]
	}
	if d := time.Duration(float64(p.n)/p.rate*float64(time.Second)) - time.Since(p.start); d > 0 {
		time.Sleep(d)
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.onBytes != nil && !p.onBytes(p.n) {
		return n, errHangUp
	}
	return n, err
}

// tempFiles lists this process's open files in dir as /proc/self/fd shows
// them, with their current sizes.
func tempFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	files := map[string]int64{}
	for _, e := range ents {
		fd := filepath.Join("/proc/self/fd", e.Name())
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, dir+string(os.PathSeparator)) {
			continue
		}
		if fi, err := os.Stat(fd); err == nil {
			files[link] = fi.Size()
		}
	}
	return files
}

const (
	slowRate = 16 << 20 // bytes/s: fast enough for a short test, far slower than loopback
	slowBody = 8 << 20
)

// notSent returns the bytes in c's send queue that TCP has not sent even
// once (tcpi_notsent_bytes): on loopback, bytes that wait for the peer to
// open its receive window, i.e. for the peer to read. A kernel whose
// tcp_info lacks the field (before Linux 4.6) fails the test under CI=true
// and skips it elsewhere.
func notSent(t *testing.T, c net.Conn) uint32 {
	t.Helper()
	n, ok := slowlabtest.NotSent(t, c)
	slowlabtest.Require(t, ok, "the kernel's tcp_info has no tcpi_notsent_bytes (Linux 4.6+)")
	return n
}

// waitHeldOrSent pauses the client until the app is held, its unsent bytes
// waiting for the proxy to read (true), or has sent the whole body (false).
func waitHeldOrSent(t *testing.T, app *appServer) (held bool, sent sendDone) {
	t.Helper()
	eventually(t, "the app to be held by the proxy or to finish", func() bool {
		select {
		case sent = <-app.sent:
			return true
		default:
		}
		held = app.lastConn() != nil && notSent(t, app.lastConn()) > 0
		return held
	})
	return held, sent
}

// TestProxySlowClientBufferingOn: the client stops after its first read,
// and meanwhile the proxy takes the whole body from the upstream (which is
// released) into memory and an unlinked temp file; then the client reads
// the exact body from them.
func TestProxySlowClientBufferingOn(t *testing.T) {
	body := testBody(slowBody)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, true)
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	var during map[string]int64
	var consumed int64
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		if during == nil {
			consumed = n
			if sent := app.waitSent(t); sent.err != nil {
				t.Fatalf("upstream send: %v", sent.err)
			}
			during = tempFiles(t, o.TempDir)
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	t.Logf("upstream released while the client had read %d bytes; temp files then: %v", consumed, during)

	if len(during) != 1 {
		t.Fatalf("open temp files in TempDir while the client waited: %v; want one", during)
	}
	for link, size := range during {
		base := filepath.Base(strings.TrimSuffix(link, " (deleted)"))
		if !strings.HasSuffix(link, " (deleted)") || !strings.HasPrefix(base, TempFilePrefix) {
			t.Errorf("temp file %q: want %s* and (deleted)", link, TempFilePrefix)
		}
		if size < slowBody/2 {
			t.Errorf("temp file size %d while the client waited; want most of the %d byte body spooled", size, slowBody)
		}
	}
	if ents, _ := os.ReadDir(o.TempDir); len(ents) != 0 {
		t.Errorf("TempDir has %d entries; temp files must be unlinked", len(ents))
	}
	eventually(t, "temp file closed", func() bool { return len(tempFiles(t, o.TempDir)) == 0 })
	eventually(t, "temp_files_open back to 0", func() bool { return testutil.ToFloat64(p.m.tempFilesOpen) == 0 })
	if v := testutil.ToFloat64(p.m.spooledBytes); v < slowBody/2 || v > slowBody {
		t.Errorf("spooled_bytes_total %v; want most of %d", v, slowBody)
	}
}

// TestProxySlowClientBufferingOff: when the client stops reading after its
// first read, the proxy stops reading the upstream, whose unsent bytes then
// wait for the proxy's window: the upstream is held at the client's pace.
func TestProxySlowClientBufferingOff(t *testing.T) {
	body := testBody(slowBody)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, false)
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	paused := false
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		if len(tempFiles(t, o.TempDir)) != 0 {
			t.Errorf("temp file open with buffering off")
		}
		if !paused {
			paused = true
			if held, sent := waitHeldOrSent(t, app); !held {
				t.Fatalf("the upstream sent the whole body (err %v) while the client had read %d bytes: the proxy buffered it", sent.err, n)
			}
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	if sent := app.waitSent(t); sent.err != nil {
		t.Errorf("upstream send: %v", sent.err)
	}
	if v := testutil.ToFloat64(p.m.spooledBytes); v != 0 {
		t.Errorf("spooled_bytes_total %v with buffering off", v)
	}
}

// TestProxyMaxTempFileSize: with the client stopped after its first read,
// the proxy spools up to MaxTempFileSize and no further, then stops reading
// the upstream (back-pressure): the upstream's unsent bytes wait for the
// proxy's window. The client then reads the exact body.
func TestProxyMaxTempFileSize(t *testing.T) {
	const limit = 256 << 10
	body := testBody(slowBody)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, true)
	o.MaxTempFileSize = limit
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))
	segment := int64(max(o.BufferSize, o.Buffers.Size)) // the file fills in whole read segments

	var peak int64
	sizes := func() {
		for _, size := range tempFiles(t, o.TempDir) {
			peak = max(peak, size)
		}
	}
	paused := false
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		sizes()
		if !paused {
			paused = true
			eventually(t, "the temp file to fill up to the limit", func() bool { sizes(); return peak > limit-segment })
			if held, sent := waitHeldOrSent(t, app); !held {
				t.Fatalf("the upstream sent the whole body (err %v) while the client had read %d bytes and the temp file holds at most %d: no back-pressure", sent.err, n, limit)
			}
			sizes()
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	if sent := app.waitSent(t); sent.err != nil {
		t.Errorf("upstream send: %v", sent.err)
	}
	t.Logf("temp file peak %d bytes", peak)
	if peak > limit {
		t.Errorf("temp file peak %d; want at most %d", peak, limit)
	}
	if v := testutil.ToFloat64(p.m.spooledBytes); v == 0 || v > limit {
		t.Errorf("spooled_bytes_total %v; want 0 < v <= %d", v, limit)
	}
}

// TestProxyClientDisconnect: a client hanging up mid-body tears down the
// upstream connection, the temp file and every goroutine of the request.
func TestProxyClientDisconnect(t *testing.T) {
	for _, buffering := range []bool{false, true} {
		t.Run(fmt.Sprint("buffering=", buffering), func(t *testing.T) {
			body := testBody(slowBody)
			app := newAppServerOn(t, body, listen(t, smallSndbuf))
			o := testOptions(t, app.URL, buffering)
			o.MaxTempFileSize = 1 << 20 // the reader is stuck waiting when the client leaves
			p, addr := startProxyOn(t, o, listen(t, smallSndbuf))
			before := requestGoroutines() // left over from earlier tests: not this one's

			res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
				return n < 2<<20
			}}.get(t, addr, "/large")
			if res.err != errHangUp {
				t.Fatalf("client error %v, want hang-up", res.err)
			}
			sent := app.waitSent(t)
			if sent.err == nil {
				t.Errorf("upstream finished sending %d bytes to a client that left at 2 MiB", len(body))
			}
			eventually(t, "request finished", func() bool { return testutil.ToFloat64(p.m.inFlight) == 0 })
			if b := p.Buffered(); len(b) != 0 {
				t.Errorf("Buffered after the client left: %+v; want none", b)
			}
			eventually(t, "temp files closed", func() bool {
				return testutil.ToFloat64(p.m.tempFilesOpen) == 0 && len(tempFiles(t, o.TempDir)) == 0
			})
			if v := testutil.ToFloat64(p.m.clientDisconnects); v != 1 {
				t.Errorf("client_disconnects_total %v, want 1", v)
			}
			var left []string
			deadline := time.Now().Add(slowlabtest.HangGuard)
			for {
				left = left[:0]
				for id, stack := range requestGoroutines() {
					if _, old := before[id]; !old {
						left = append(left, stack)
					}
				}
				if len(left) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("%d goroutines of the request still running after %v:\n%s", len(left), slowlabtest.HangGuard, strings.Join(left, "\n\n"))
			}
		})
	}
}

// TestProxyServeShutdown: cancelling Serve's context aborts a slow
// download after ShutdownTimeout and closes its temp file before returning.
func TestProxyServeShutdown(t *testing.T) {
	app := newAppServer(t, testBody(slowBody))
	o := testOptions(t, app.URL, true)
	o.ShutdownTimeout = 100 * time.Millisecond
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	// A small send buffer: what the kernel holds still reaches the
	// client after the proxy closes the socket, at the client's pace.
	ln := listen(t, smallSndbuf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln, nil) }()

	// The client stops after its first read until Serve has returned, so
	// the download is still running when the shutdown's grace runs out,
	// however slow the machine.
	started, stopped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	got := make(chan slowResult, 1)
	go func() {
		got <- slowClient{rate: 4 << 20, rcvbuf: 8 << 10, onBytes: func(int64) bool {
			once.Do(func() { close(started) })
			select {
			case <-stopped:
				return true
			case <-time.After(slowlabtest.HangGuard):
				return false
			}
		}}.get(t, ln.Addr().String(), "/large")
	}()
	select {
	case <-started:
	case res := <-got:
		t.Fatalf("the download never started: %+v", res.err)
	}
	eventually(t, "temp file in use", func() bool { return len(tempFiles(t, o.TempDir)) == 1 })
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(slowlabtest.HangGuard):
		t.Fatal("Serve did not return after shutdown")
	}
	close(stopped)
	if files := tempFiles(t, o.TempDir); len(files) != 0 {
		t.Errorf("temp files still open after Serve returned: %v", files)
	}
	if res := <-got; res.err == nil || res.err == errHangUp {
		t.Errorf("client got %d bytes, error %v, from an aborted response; want a broken response", len(res.body), res.err)
	}
}
