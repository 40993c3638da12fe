package appserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/loadgen"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestUploadHoldsWorker: a sync worker reading an upload is busy until the
// body's last byte came, then answers the bytes it read and its time in
// body reads (lab/slowupload's TestAppsServeUpload checks the four apps
// alike through loadgen's uploader).
func TestUploadHoldsWorker(t *testing.T) {
	s, base, _ := startServer(t, Options{Model: ModelSync, Workers: 1, Threads: 1, LargeSize: 10, BlockSize: 4})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 3*UploadChunk + 5
	body := strings.Repeat("u", size)
	fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, body[:UploadChunk])
	slowlabtest.WaitFor(t, "the worker to be busy reading the body", func() bool { return gauges(s, "slowlab_target_busy_slots")["0"] == 1 })
	if _, err := io.WriteString(conn, body[UploadChunk:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(out) != fmt.Sprintf(`{"bytes": %d}`, size) || resp.Header.Get(UploadBytesHeader) != fmt.Sprint(size) {
		t.Fatalf("%d %q, %s %q: want 200 and %d bytes read", resp.StatusCode, out, UploadBytesHeader, resp.Header.Get(UploadBytesHeader), size)
	}
	read, ok := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), UploadTimingMetric)
	total, ok2 := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app")
	if !ok || !ok2 || read <= 0 || read > total {
		t.Errorf("Server-Timing %q: want body;dur above 0 and at most app;dur", resp.Header.Get("Server-Timing"))
	}
	slowlabtest.WaitFor(t, "the worker to be free", func() bool { return gauges(s, "slowlab_target_busy_slots")["0"] == 0 })
}
