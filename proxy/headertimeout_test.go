package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestHeaderTimeoutIsSilent: a client that sends half a request header and
// stops, or nothing at all, is closed at client_header_timeout with
// nothing written back, as NGINX does; a client whose request header
// arrives in time gets its response, and one whose upstream answers slowly
// is not cut by the header timeout.
func TestHeaderTimeoutIsSilent(t *testing.T) {
	slowlabtest.EndToEnd(t, "it waits out a proxy timeout")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(1500 * time.Millisecond) // longer than the header timeout
		}
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	o := testOptions(t, up.URL, true)
	o.ClientHeaderTimeout = time.Second
	_, addr := startProxy(t, o)
	for _, sent := range []string{"", "GET /fast HTTP/1.1\r\nHo"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, sent)
		c.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
		start := time.Now()
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || len(got) != 0 || time.Since(start) < 900*time.Millisecond {
			t.Errorf("sent %q: got %q (%v) after %v; want nothing, closed at the 1 s header timeout", sent, got, err, time.Since(start))
		}
	}
	for _, path := range []string{"/fast", "/slow"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "ok") {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
}
