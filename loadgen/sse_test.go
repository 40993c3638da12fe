package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// sseServer writes ticks ticks 20 ms apart, each stamped when written,
// then the end event unless cut.
func sseServer(t *testing.T, ticks int, cut bool, status int) *url.URL {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status != http.StatusOK {
			http.Error(w, "no", status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range ticks {
			time.Sleep(20 * time.Millisecond)
			fmt.Fprintf(w, "id: %d\ndata: {\"seq\": %d, \"t_us\": %d}\n\n", i, i, time.Now().UnixMicro())
			rc.Flush()
		}
		if cut {
			panic(http.ErrAbortHandler)
		}
		fmt.Fprintf(w, "event: end\ndata: {\"events\": %d, \"t_us\": %d}\n\n", ticks, time.Now().UnixMicro())
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/events")
	return u
}

func TestSSEClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cut     bool
		status  int
		outcome string
		events  int
	}{
		{"complete", false, 200, SSEComplete, 3},
		{"truncated", true, 200, SSETruncated, 3},
		{"status", false, 400, SSEStatus, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SSEClient{URL: sseServer(t, 3, tc.cut, tc.status), Timeout: time.Minute}.Run(context.Background(), 7)
			if s.Outcome != tc.outcome || len(s.Events) != tc.events || s.Status != tc.status {
				t.Fatalf("%+v: want %s with %d events", s, tc.outcome, tc.events)
			}
			for i, e := range s.Events {
				if e.Seq != i || e.Delay() < 0 || e.Delay() > 10*time.Second {
					t.Errorf("event %d: %+v, delay %v", i, e, e.Delay())
				}
			}
			if s.FirstByte <= 0 {
				t.Errorf("first byte %v", s.FirstByte)
			}
		})
	}
	// The run's context ending first is a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if s := (SSEClient{URL: sseServer(t, 50, false, 200)}).Run(ctx, 0); s.Outcome != SSETimeout {
		t.Errorf("cancelled stream: %s (%v)", s.Outcome, s.Err)
	}
}
