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
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// slowClient downloads like the experiment's slow clients: SO_RCVBUF set
// before connecting, at most 16 KiB per read, reads paced to rate.
type slowClient struct {
	rate    float64 // bytes per second
	rcvbuf  int
	onBytes func(n int64) bool // after each read; false hangs up
}

type slowResult struct {
	status int
	body   []byte
	took   time.Duration // request sent -> last byte consumed
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
	start := time.Now()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	pr := &pacedReader{r: conn, rate: c.rate, start: start, onBytes: c.onBytes}
	resp, err := http.ReadResponse(bufio.NewReaderSize(pr, 16<<10), nil)
	if err != nil {
		return slowResult{err: err}
	}
	body, err := io.ReadAll(resp.Body)
	return slowResult{status: resp.StatusCode, body: body, took: time.Since(start), err: err}
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

func TestProxySlowClientBufferingOn(t *testing.T) {
	body := testBody(slowBody)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, true)
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	var during map[string]int64
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		if during == nil && n >= slowBody/2 {
			during = tempFiles(t, o.TempDir)
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	sent := app.waitSent(t)
	t.Logf("upstream sent in %v, client took %v", sent.took, res.took)
	// Without -race or load it is 1-2%.
	if sent.err != nil || sent.took > res.took/2 && !raceEnabled {
		t.Errorf("upstream took %v (err %v) of the client's %v; want it released well before (< 1/2)", sent.took, sent.err, res.took)
	}

	if len(during) != 1 {
		t.Fatalf("open temp files in TempDir while draining: %v; want one", during)
	}
	for link, size := range during {
		base := filepath.Base(strings.TrimSuffix(link, " (deleted)"))
		if !strings.HasSuffix(link, " (deleted)") || !strings.HasPrefix(base, TempFilePrefix) {
			t.Errorf("temp file %q: want %s* and (deleted)", link, TempFilePrefix)
		}
		if size < slowBody/4 {
			t.Errorf("temp file size %d while draining; want most of the %d byte body spooled", size, slowBody)
		}
	}
	if ents, _ := os.ReadDir(o.TempDir); len(ents) != 0 {
		t.Errorf("TempDir has %d entries; temp files must be unlinked", len(ents))
	}
	eventually(t, "temp file closed", func() bool { return len(tempFiles(t, o.TempDir)) == 0 })
	eventually(t, "temp_files_open back to 0", func() bool { return testutil.ToFloat64(p.m.tempFilesOpen) == 0 })
	if v := testutil.ToFloat64(p.m.spooledBytes); v < slowBody/4 || v > slowBody {
		t.Errorf("spooled_bytes_total %v; want most of %d", v, slowBody)
	}
}

func TestProxySlowClientBufferingOff(t *testing.T) {
	body := testBody(slowBody)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, false)
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		if len(tempFiles(t, o.TempDir)) != 0 {
			t.Errorf("temp file open with buffering off")
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	sent := app.waitSent(t)
	t.Logf("upstream sent in %v, client took %v", sent.took, res.took)
	// Socket buffers between app and client (kept small here) absorb
	// part of the body, so the upstream finishes a little before.
	if sent.took < res.took*3/4 && !raceEnabled {
		t.Errorf("upstream took %v of the client's %v; want it held for most of it", sent.took, res.took)
	}
	if v := testutil.ToFloat64(p.m.spooledBytes); v != 0 {
		t.Errorf("spooled_bytes_total %v with buffering off", v)
	}
}

func TestProxyMaxTempFileSize(t *testing.T) {
	const limit = 256 << 10
	body := testBody(2 << 20)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, true)
	o.MaxTempFileSize = limit
	p, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	var peak int64
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(int64) bool {
		for _, size := range tempFiles(t, o.TempDir) {
			peak = max(peak, size)
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	sent := app.waitSent(t)
	t.Logf("temp file peak %d bytes; upstream sent in %v, client took %v", peak, sent.took, res.took)
	if peak == 0 || peak > limit {
		t.Errorf("temp file peak %d; want 0 < peak <= %d", peak, limit)
	}
	if v := testutil.ToFloat64(p.m.spooledBytes); v == 0 || v > limit {
		t.Errorf("spooled_bytes_total %v; want 0 < v <= %d", v, limit)
	}
	// Once the file is full the upstream waits for the client.
	if sent.took < res.took/2 && !raceEnabled {
		t.Errorf("upstream took %v of the client's %v; want back-pressure", sent.took, res.took)
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
			before := settledGoroutines()

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
			eventually(t, "temp files closed", func() bool {
				return testutil.ToFloat64(p.m.tempFilesOpen) == 0 && len(tempFiles(t, o.TempDir)) == 0
			})
			if v := testutil.ToFloat64(p.m.clientDisconnects); v != 1 {
				t.Errorf("client_disconnects_total %v, want 1", v)
			}
			deadline := time.Now().Add(3 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines, %d before the request:\n%s", n, before, buf[:runtime.Stack(buf, true)])
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

	started := make(chan struct{})
	var once sync.Once
	got := make(chan slowResult, 1)
	go func() {
		got <- slowClient{rate: 4 << 20, rcvbuf: 8 << 10, onBytes: func(int64) bool {
			once.Do(func() { close(started) })
			return true
		}}.get(t, ln.Addr().String(), "/large")
	}()
	<-started
	eventually(t, "temp file in use", func() bool { return len(tempFiles(t, o.TempDir)) == 1 })
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if files := tempFiles(t, o.TempDir); len(files) != 0 {
		t.Errorf("temp files still open after Serve returned: %v", files)
	}
	if res := <-got; res.err == nil {
		t.Errorf("client got the whole body (%d bytes) from an aborted response", len(res.body))
	}
}
