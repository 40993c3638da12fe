package proxy

import (
	"bufio"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestProxyTempDiskFull: a temp dir on a full tmpfs (256 KiB) makes the
// spool's write fail with ENOSPC; the proxy logs it as NGINX does
// ([crit] pwrite() ... failed (28: ...)) and cuts the response at once:
// the client that had not read yet gets a 200 header and a body shorter
// than its Content-Length, then the connection closes.
func TestProxyTempDiskFull(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "mounting a tmpfs for the temp dir")
	const size = 4 << 20
	body := testBody(size)
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	o := testOptions(t, app.URL, true)
	if err := syscall.Mount("tmpfs", o.TempDir, "tmpfs", 0, "size=256k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(o.TempDir, syscall.MNT_DETACH) })
	var logs slowlabtest.SyncBuffer
	log.SetOutput(&logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	_, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /large HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Read nothing until the proxy has found the disk full.
	eventually(t, "the proxy to log the failed temp write", func() bool { return strings.Contains(logs.String(), "[crit] pwrite()") })
	line := logs.String()
	if !strings.Contains(line, "failed (28: no space left on device) while reading upstream") {
		t.Errorf("log %q: want NGINX's errno text", line)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || got >= size || err == nil {
		t.Errorf("status %d, %d of %d bytes, err %v; want 200 and a truncated body", resp.StatusCode, got, size, err)
	}
	t.Logf("client got %d of %d bytes (%v); log: %s", got, size, err, line)
}
