package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// sseServer writes ticks ticks 20 ms apart, each stamped when written,
// then the end event unless cut. A client gone ends it (Close waits for
// its handlers).
func sseServer(t *testing.T, ticks int, cut bool, status int) *url.URL {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status != http.StatusOK {
			http.Error(w, "no", status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range ticks {
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
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

// Whatever a stream's body holds, reading it never panics, keeps at most
// maxEvents ticks, each as its data gave it, and ends without an error
// only after the end event.
func FuzzReadEvents(f *testing.F) {
	slowlabtest.SeedFiles(f, "*.sse")
	f.Fuzz(func(t *testing.T, body string) {
		var s SSEStream
		err := readEvents(strings.NewReader(body), &s, 3)
		if len(s.Events) > 3 {
			t.Fatalf("%d events kept, want at most 3", len(s.Events))
		}
		if err == nil && !s.EndEvent {
			t.Fatalf("no error without the end event: %q", body)
		}
		for _, e := range s.Events {
			if !strings.Contains(body, strconv.Itoa(e.Seq)) {
				t.Fatalf("event seq %d is not in %q", e.Seq, body)
			}
		}
	})
}

// The seeds read as their names say: four.sse's fourth tick is one over
// the bound of 3.
func TestReadEventsSeeds(t *testing.T) {
	for name, want := range map[string]struct {
		events int
		err    string
	}{
		"complete.sse": {2, ""}, "crlf.sse": {1, ""}, "truncated.sse": {1, "unexpected EOF"},
		"after-end.sse": {0, "after the end event"}, "bad-json.sse": {0, "event data"}, "four.sse": {3, "more than 3 events"},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "events", name))
		if err != nil {
			t.Fatal(err)
		}
		var s SSEStream
		err = readEvents(strings.NewReader(string(b)), &s, 3)
		if len(s.Events) != want.events || (err == nil) != (want.err == "") || (err != nil && !strings.Contains(err.Error(), want.err)) {
			t.Errorf("%s: %d events, %v; want %d, %q", name, len(s.Events), err, want.events, want.err)
		}
	}
}
