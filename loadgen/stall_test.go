package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// A stalled reader reads StallAfter bytes, reads nothing for Stall, then
// the rest unpaced; a server that waits for it gives the whole body.
func TestSlowReaderStall(t *testing.T) {
	const size = 2 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		block := make([]byte, 64<<10)
		for off := 0; off < size; off += len(block) {
			if _, err := w.Write(block); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/large")
	s := SlowReader{URL: u, RcvBuf: DefaultSlowRcvBuf, ReadSize: DefaultSlowReadSize, Rate: 16 << 20, Timeout: 30 * time.Second,
		Stall: 300 * time.Millisecond, StallAfter: 64 << 10}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	d := s.Run(context.Background(), 0)
	if d.Err != nil || !d.Complete || d.Bytes != size {
		t.Fatalf("%d bytes, complete %v, err %v", d.Bytes, d.Complete, d.Err)
	}
	if d.StallBytes != 64<<10 || d.Stalled.IsZero() || d.Resumed.Sub(d.Stalled) < 300*time.Millisecond || d.LastByte.Before(d.Resumed) {
		t.Errorf("stalled at %d bytes, %v to %v, last byte %v", d.StallBytes, d.Stalled, d.Resumed, d.LastByte)
	}
	// The client's bound must outlast the stall.
	s.Timeout = s.Stall
	if s.Validate() == nil {
		t.Error("a timeout no longer than the stall validated")
	}
}
