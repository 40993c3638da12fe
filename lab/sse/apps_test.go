package sse

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// TestAppsServeEvents: all four apps serve GET /events alike: the ticks
// asked for, each stamped when written (its delay on loopback far below
// the interval), then the end event; X-Accel-Buffering as asked; a bad
// interval is a 400 with the same text. Each app runs as a deployment of
// its own.
func TestAppsServeEvents(t *testing.T) {
	for _, tc := range []struct{ stack, server string }{
		{"embedded+embedded", "sync-1"},
		{"gunicorn+embedded", "sync-1"},
		{"uvicorn+embedded", "uvicorn-1"},
		{"node+embedded", "node-1"},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			running := labtest.StartOwn(t, tc.stack, stack.RouteDirect, tc.server, 0)
			p := appserver.SSEParams{Interval: 50 * time.Millisecond, Duration: 500 * time.Millisecond, Pad: 5, Accel: "no"}
			u, err := url.Parse(running.URL() + "/events?" + p.Query())
			if err != nil {
				t.Fatal(err)
			}
			s := loadgen.SSEClient{URL: u, Timeout: time.Minute}.Run(context.Background(), 0)
			if s.Outcome != recorder.SSEComplete || len(s.Events) != p.Events() {
				t.Fatalf("stream: %s, %d events (%v); want complete with %d", s.Outcome, len(s.Events), s.Err, p.Events())
			}
			var delays []time.Duration
			for i, e := range s.Events {
				if e.Seq != i || e.Delay() < -time.Millisecond {
					t.Errorf("event %d: seq %d, delay %v", i, e.Seq, e.Delay())
				}
				delays = append(delays, e.Delay())
			}
			// Unbuffered: the typical event arrives well within the
			// interval. One event's delay is a loaded machine's luck
			// (102 ms was seen); the median of the stream is the shape.
			slices.Sort(delays)
			if med := delays[len(delays)/2]; med > 45*time.Millisecond {
				t.Errorf("median event delay %v (all %v), want well under the 50ms interval", med, delays)
			}
			resp, err := http.Get(running.URL() + "/events?interval=1ms")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || strings.TrimSpace(string(b)) != `interval "1ms": want a duration from 10ms to 10s` {
				t.Errorf("bad interval: %d %q", resp.StatusCode, b)
			}
			resp, err = http.Get(running.URL() + "/events?interval=10ms&duration=10ms&accel=no")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get(appserver.AccelBufferingHeader) != "no" {
				t.Errorf("headers %v", resp.Header)
			}
		})
	}
}
