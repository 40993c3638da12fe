package appserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/loadgen"
)

// With LastByteTiming the target sends every response chunked, with its
// Server-Timing header and again as a trailer timed through the last byte.
func TestLastByteTiming(t *testing.T) {
	tg, err := New(Options{Model: ModelAsync, Workers: 1, Threads: 1, BlockSize: 4096, LastByteTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Serve(ctx, ln, nil) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	for _, size := range []int{0, 1024, 102400} {
		resp, err := http.Get(base + "/bytes?n=" + strconv.Itoa(size))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(size) || resp.StatusCode != 200 {
			t.Fatalf("%d bytes: got %d, status %d, %v", size, n, resp.StatusCode, err)
		}
		if resp.ContentLength != -1 || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) {
			t.Errorf("%d bytes: Content-Length %d, Transfer-Encoding %v; want chunked", size, resp.ContentLength, resp.TransferEncoding)
		}
		hdr, okH := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app")
		last, okT := loadgen.ParseServerTiming(resp.Trailer.Get("Server-Timing"), "app")
		if !okH || !okT || last < hdr {
			t.Errorf("%d bytes: header %s (%v), trailer %s (%v); want both, trailer >= header", size, hdr, okH, last, okT)
		}
	}
	// An error from the target still arrives whole.
	resp, err := http.Get(base + "/bytes?n=x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `n "x"`) {
		t.Errorf("bad request: %d %q", resp.StatusCode, b)
	}
}
