package sse

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// TestAppsServeEvents: every registered app serves GET /events alike: the ticks
// asked for, each stamped when written (its delay on loopback far below
// the interval: at most a fifth of them half an interval late), then the
// end event; X-Accel-Buffering as asked; a bad interval is a 400 with the
// same text. Each app runs as a deployment of its own.
func TestAppsServeEvents(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range labtest.Apps() {
		t.Run(tc.Stack, func(t *testing.T) {
			running := labtest.StartOwn(t, tc.Stack, stack.RouteDirect, tc.Server, 0)
			p := appserver.SSEParams{Interval: 50 * time.Millisecond, Duration: time.Second, Pad: 5, Accel: "no"}
			u, err := url.Parse(running.URL() + "/events?" + p.Query())
			if err != nil {
				t.Fatal(err)
			}
			s := loadgen.SSEClient{URL: u, Timeout: time.Minute}.Run(context.Background(), 0)
			if s.Outcome != loadgen.SSEComplete || len(s.Events) != p.Events() {
				t.Fatalf("stream: %s, %d events (%v); want complete with %d", s.Outcome, len(s.Events), s.Err, p.Events())
			}
			for i, e := range s.Events {
				if e.Seq != i || e.Delay() < -time.Millisecond {
					t.Errorf("event %d: seq %d, delay %v", i, e.Seq, e.Delay())
				}
			}
			if err := checkOnTime(s.Events, p.Interval); err != nil {
				t.Error(err)
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

// lateEvents counts the events of a stream that arrived half an interval
// or more after the app stamped them: an event a buffer held back waits
// for the next one, an interval; on time it waits for loopback.
func lateEvents(events []loadgen.SSEDelivery, interval time.Duration) int {
	late := 0
	for _, e := range events {
		if e.Delay() >= interval/2 {
			late++
		}
	}
	return late
}

// checkOnTime checks an unbuffered stream's events arrived as written:
// at most a fifth of them late (lateEvents). Counted in events, not
// time: a loaded machine that stalls the client or the app delays the
// events written during the stall, one or two at 50 ms apart (one at
// 102 ms was seen), while a stream that holds events back makes each one
// it holds late.
func checkOnTime(events []loadgen.SSEDelivery, interval time.Duration) error {
	if late := lateEvents(events, interval); late > len(events)/5 {
		return fmt.Errorf("%d of %d events arrived %v or more after they were written (%v); want at most %d: an unbuffered stream",
			late, len(events), interval/2, delaysOf(events), len(events)/5)
	}
	return nil
}

// delaysOf lists the events' delays, rounded to 0.1 ms.
func delaysOf(events []loadgen.SSEDelivery) []time.Duration {
	out := make([]time.Duration, len(events))
	for i, e := range events {
		out[i] = e.Delay().Round(100 * time.Microsecond)
	}
	return out
}

// TestCheckOnTime: a stream whose events arrive as written passes, with
// a loaded machine's stall delaying two of them; one that holds back 9
// of its 20 events (each until the next is written) fails, which the
// median delay the check replaces passed, and so does one that holds
// back half.
func TestCheckOnTime(t *testing.T) {
	const interval = 50 * time.Millisecond
	t0 := time.Unix(1000, 0)
	stream := func(heldBack func(i int) bool, stall map[int]time.Duration) []loadgen.SSEDelivery {
		var out []loadgen.SSEDelivery
		for i := range 20 {
			sent := t0.Add(time.Duration(i) * interval)
			got := sent.Add(200*time.Microsecond + stall[i])
			if heldBack(i) {
				got = got.Add(interval) // delivered with the next event
			}
			out = append(out, loadgen.SSEDelivery{Seq: i, Sent: sent, Received: got})
		}
		return out
	}
	median := func(events []loadgen.SSEDelivery) time.Duration {
		d := make([]time.Duration, len(events))
		for i, e := range events {
			d[i] = e.Delay()
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	none := func(int) bool { return false }
	if err := checkOnTime(stream(none, map[int]time.Duration{6: 102 * time.Millisecond, 7: 52 * time.Millisecond}), interval); err != nil {
		t.Errorf("on time, one stall: %v", err)
	}
	nine := stream(func(i int) bool { return i%2 == 1 && i < 18 }, nil)
	if lateEvents(nine, interval) != 9 || median(nine) > 45*time.Millisecond {
		t.Fatalf("9 of 20 held back: %d late, median %v; want 9, a median the old rule (45 ms) passed", lateEvents(nine, interval), median(nine))
	}
	if err := checkOnTime(nine, interval); err == nil {
		t.Error("a stream holding back 9 of 20 events passed")
	}
	if err := checkOnTime(stream(func(i int) bool { return i%2 == 1 }, nil), interval); err == nil {
		t.Error("a stream holding back half its events passed")
	}
}
