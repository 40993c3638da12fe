package loadgen

import (
	"context"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// The one-shot clients that read a response on their own connection (the
// slow reader, the SSE client, the slow uploader) bound its header as the
// fast clients do: against a server that writes header bytes for ever,
// each fails with header_too_large having allocated a few MiB, where an
// unbounded one reads until the server's stop after 64 MiB.
func TestOneShotClientsBoundHeader(t *testing.T) {
	slowlabtest.Timing(t)
	header := "X-Endless: " + strings.Repeat("a", 1000) + "\r\n"
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, u *url.URL) error
	}{
		{"slow reader", func(ctx context.Context, u *url.URL) error {
			return SlowReader{URL: u, RcvBuf: DefaultSlowRcvBuf, ReadSize: DefaultSlowReadSize, Rate: 1 << 30}.Run(ctx, 0).Err
		}},
		{"sse client", func(ctx context.Context, u *url.URL) error { return SSEClient{URL: u}.Run(ctx, 0).Err }},
		{"slow uploader", func(ctx context.Context, u *url.URL) error {
			return SlowUploader{URL: u, Size: 1024, Rate: 1 << 30, WriteSize: 1024}.Run(ctx, 0).Err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			alloc, written := againstEndless(t, "HTTP/1.1 200 OK\r\n", header, func(ctx context.Context, u *url.URL) { err = tc.run(ctx, u) })
			t.Logf("%v (%s), allocated %.1f MiB, server wrote %.1f MiB", err, ErrorReason(err), float64(alloc)/(1<<20), float64(written)/(1<<20))
			if ErrorReason(err) != "header_too_large" {
				t.Errorf("err %v (%s), want header_too_large", err, ErrorReason(err))
			}
			if alloc > 4<<20 {
				t.Errorf("allocated %d bytes, want at most %d", alloc, 4<<20)
			}
		})
	}
}

// againstEndless runs one client against an endlessServer writing head,
// then body for ever (stopped after stopAfter bytes), and returns the
// bytes the process allocated meanwhile and those the server wrote.
func againstEndless(t *testing.T, head, body string, run func(ctx context.Context, u *url.URL)) (alloc uint64, written int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newEndlessServer(t, head, body, cancel)
	u, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run(ctx, u)
	written = <-srv.done // the server saw the client close
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, written
}

// An SSE stream's body is bounded too: a line that never ends fails the
// stream at sseMaxLine, ticks for ever at MaxEvents, with the memory the
// stream allocated bounded, where an unbounded client reads until the
// server's stop after 64 MiB.
func TestSSEClientBoundsBody(t *testing.T) {
	slowlabtest.Timing(t)
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
	for _, tc := range []struct {
		name, body, err string
		events          int
	}{
		{"endless line", "data: " + strings.Repeat("a", 1000), "a line over 65536 bytes", 0},
		{"endless ticks", "data: {\"seq\": 1, \"t_us\": 1}\n\n", "more than 1000 events", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s SSEStream
			alloc, written := againstEndless(t, head, tc.body, func(ctx context.Context, u *url.URL) { s = SSEClient{URL: u, MaxEvents: 1000}.Run(ctx, 0) })
			t.Logf("%s %v, %d events, allocated %.1f MiB, server wrote %.1f MiB", s.Outcome, s.Err, len(s.Events), float64(alloc)/(1<<20), float64(written)/(1<<20))
			if s.Err == nil || !strings.Contains(s.Err.Error(), tc.err) || len(s.Events) != tc.events || s.Outcome != SSEError {
				t.Errorf("%s %v with %d events, want error %q with %d", s.Outcome, s.Err, len(s.Events), tc.err, tc.events)
			}
			if alloc > 4<<20 {
				t.Errorf("allocated %d bytes, want at most %d", alloc, 4<<20)
			}
		})
	}
}
