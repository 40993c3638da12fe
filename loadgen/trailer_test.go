package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A Server-Timing trailer (the server's time through its last byte) is
// read after the body, beside the header's; with TCPInfo the result
// carries the connection's RTT as the kernel measured it.
func TestServerTimingTrailerAndTCPInfo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server-Timing", "app;dur=1.5")
		w.Header().Set("Trailer", "Server-Timing")
		w.Write([]byte("body"))
		w.(http.Flusher).Flush()
		w.Header().Set("Server-Timing", "app;dur=7.25")
	}))
	defer srv.Close()
	for _, keepAlive := range []bool{false, true} {
		c := NewClient(ClientOptions{TCPInfo: true, KeepAlive: keepAlive})
		for i := range 2 {
			var r Result
			c.Get(context.Background(), srv.URL, &r)
			if r.Err != nil || r.Status != 200 || r.Bytes != 4 {
				t.Fatalf("result %+v", r)
			}
			if r.ServerTiming.Seconds() != 0.0015 || r.ServerTimingTrailer.Seconds() != 0.00725 {
				t.Errorf("header %s, trailer %s: want 1.5ms and 7.25ms", r.ServerTiming, r.ServerTimingTrailer)
			}
			if r.TCPMinRTT <= 0 {
				t.Errorf("keep-alive %t request %d: TCPMinRTT %s, want the kernel's measure", keepAlive, i, r.TCPMinRTT)
			}
			if r.NewConn != (i == 0 || !keepAlive) {
				t.Errorf("keep-alive %t request %d: new connection %t", keepAlive, i, r.NewConn)
			}
		}
		c.Close()
	}
	var r Result
	NewClient(ClientOptions{}).Get(context.Background(), srv.URL, &r)
	if r.TCPMinRTT != 0 {
		t.Errorf("TCPMinRTT %s without TCPInfo", r.TCPMinRTT)
	}
}
