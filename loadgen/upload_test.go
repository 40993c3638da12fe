package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func uploadTo(t *testing.T, raw string, size int64) Upload {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	up := SlowUploader{URL: u, Size: size, Rate: 64 << 20, SndBuf: DefaultUploadSndBuf, WriteSize: DefaultUploadWriteSize, Timeout: time.Minute}
	return up.Run(context.Background(), 3)
}

func TestSlowUploaderOK(t *testing.T) {
	slowlabtest.Timing(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set(uploadBytesHeader, fmt.Sprint(n))
		w.Header().Set("Server-Timing", "app;dur=9, body;dur=7.5")
		fmt.Fprintf(w, `{"bytes": %d}`, n)
	}))
	defer srv.Close()
	u := uploadTo(t, srv.URL+"/upload", 1<<20+5)
	if u.Outcome != UploadOK || u.Err != nil || u.Status != 200 || u.Client != 3 {
		t.Fatalf("got %+v, want ok", u)
	}
	if u.Sent != 1<<20+5 || !u.AppBytesOK || u.AppBytes != u.Sent {
		t.Fatalf("sent %d, app read %d (%v): want both %d", u.Sent, u.AppBytes, u.AppBytesOK, 1<<20+5)
	}
	if !u.AppReadOK || u.AppRead != 7500*time.Microsecond {
		t.Fatalf("app read %v (%v), want 7.5ms from Server-Timing body", u.AppRead, u.AppReadOK)
	}
	if u.Send <= 0 || u.Total < u.Send {
		t.Fatalf("send %v, total %v: want 0 < send <= total", u.Send, u.Total)
	}
}

func TestSlowUploaderEarlyStatus(t *testing.T) {
	slowlabtest.Timing(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer srv.Close()
	u := uploadTo(t, srv.URL+"/upload", 64<<20)
	if u.Outcome != UploadServerError || u.Status != http.StatusBadGateway {
		t.Fatalf("got %+v, want a 5xx outcome with 502", u)
	}
}

// TestSlowUploaderReset: a server that reads part of the body and resets
// the connection, as the kernel does for a killed Gunicorn worker.
func TestSlowUploaderReset(t *testing.T) {
	slowlabtest.Timing(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.ReadFull(c, make([]byte, 256<<10))
		c.(*net.TCPConn).SetLinger(0) // close with RST
		c.Close()
	}()
	u := uploadTo(t, "http://"+ln.Addr().String()+"/upload", 64<<20)
	<-done
	if u.Outcome != UploadReset || u.Status != 0 || u.Err == nil {
		t.Fatalf("got %+v, want a reset", u)
	}
	if u.Sent < 256<<10 || u.Sent >= 64<<20 {
		t.Fatalf("sent %d, want at least what the server read and less than the body", u.Sent)
	}
}

func TestSlowUploaderTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // never read: the uploader's writes block
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	u, _ := url.Parse("http://" + ln.Addr().String() + "/upload")
	res := make(chan Upload)
	go func() {
		res <- SlowUploader{URL: u, Size: 64 << 20, Rate: 64 << 20, SndBuf: DefaultUploadSndBuf, WriteSize: DefaultUploadWriteSize}.Run(ctx, 0)
	}()
	c := <-accepted
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, 64<<10)); err != nil { // the header and some body: sending
		t.Fatal(err)
	}
	cancel()
	got := <-res
	if got.Outcome != UploadTimeout {
		t.Fatalf("got %+v, want a timeout", got)
	}
}

func TestSlowUploaderRefusesRemote(t *testing.T) {
	slowlabtest.Timing(t)
	u := uploadTo(t, "http://192.0.2.1:80/upload", 10)
	if u.Outcome != UploadError || u.Err == nil {
		t.Fatalf("got %+v, want an error (not loopback)", u)
	}
}

func TestSlowUploaderValidate(t *testing.T) {
	slowlabtest.Timing(t)
	for _, s := range []SlowUploader{{Size: -1, Rate: 1, WriteSize: 1}, {Rate: 0, WriteSize: 1}, {Rate: 1, WriteSize: 0}, {Rate: 1, WriteSize: 1, SndBuf: -1}} {
		if s.Validate() == nil {
			t.Errorf("%+v: want an error", s)
		}
	}
}

// TestSndBufControl: the send buffer is set before connect (Linux reports
// double what was asked).
func TestSndBufControl(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Control: sndBufControl(DefaultUploadSndBuf)}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	raw.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF) })
	if gerr != nil || got != 2*DefaultUploadSndBuf {
		t.Errorf("SO_SNDBUF %d (%v), want %d", got, gerr, 2*DefaultUploadSndBuf)
	}
}
