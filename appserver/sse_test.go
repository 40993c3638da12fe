package appserver

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestParseSSEQuery(t *testing.T) {
	for _, tc := range []struct {
		query, err string
		want       SSEParams
	}{
		{"", "", SSEParams{Interval: 100 * time.Millisecond, Duration: 10 * time.Second}},
		{"interval=10ms&duration=0s&pad=65536&accel=no", "", SSEParams{Interval: 10 * time.Millisecond, Pad: 65536, Accel: "no"}},
		{"interval=10s&duration=5m&accel=yes", "", SSEParams{Interval: 10 * time.Second, Duration: 5 * time.Minute, Accel: "yes"}},
		{"interval=9ms", `interval "9ms": want a duration from 10ms to 10s`, SSEParams{}},
		{"interval=11s", `interval "11s": want a duration from 10ms to 10s`, SSEParams{}},
		{"interval=fast", `interval "fast": want a duration from 10ms to 10s`, SSEParams{}},
		{"duration=-1s", `duration "-1s": want a duration from 0s to 5m0s`, SSEParams{}},
		{"duration=301s", `duration "301s": want a duration from 0s to 5m0s`, SSEParams{}},
		{"pad=65537", `pad "65537": want 0..65536 bytes`, SSEParams{}},
		{"pad=-1", `pad "-1": want 0..65536 bytes`, SSEParams{}},
		{"accel=off", `accel "off": want yes or no`, SSEParams{}},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := ParseSSEQuery(q.Get)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %s", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.query, got, err, tc.want)
		}
	}
}

func TestSSEEvents(t *testing.T) {
	for _, tc := range []struct {
		interval, duration time.Duration
		want               int
	}{{100 * time.Millisecond, 10 * time.Second, 100}, {100 * time.Millisecond, 250 * time.Millisecond, 3}, {time.Second, 0, 0}, {time.Second, time.Millisecond, 1}} {
		if n := (SSEParams{Interval: tc.interval, Duration: tc.duration}).Events(); n != tc.want {
			t.Errorf("%v every %v: %d events, want %d", tc.duration, tc.interval, n, tc.want)
		}
	}
}

// TestServeEvents: /events streams its ticks, stamped with the wall clock,
// then the end event, with the headers asked for; the stream counts as
// held on its worker; a bad query is a 400 with the parse error.
func TestServeEvents(t *testing.T) {
	o := DefaultOptions()
	o.Workers = 1
	s, base, _ := startServer(t, o)
	resp, err := http.Get(base + "/events?interval=200ms&duration=600ms&pad=3&accel=no")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get(AccelBufferingHeader) != "no" {
		t.Errorf("Content-Type %q, %s %q", ct, AccelBufferingHeader, resp.Header.Get(AccelBufferingHeader))
	}
	slowlabtest.WaitFor(t, "the stream to be held", func() bool { return gauges(s, "slowlab_target_longpolls_in_progress")["0"] == 1 })
	br := bufio.NewReader(resp.Body)
	var got []string
	for {
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			ev.WriteString(line)
			if line == "\n" {
				break
			}
		}
		got = append(got, ev.String())
		if strings.HasPrefix(ev.String(), "event: end") {
			break
		}
		if !strings.Contains(ev.String(), `"pad": "aaa"}`) {
			t.Errorf("event %q lacks its padding", ev.String())
		}
	}
	if len(got) != 4 || !strings.HasPrefix(got[0], "id: 0\ndata: {\"seq\": 0, \"t_us\": ") || !strings.HasPrefix(got[3], "event: end\ndata: {\"events\": 3, ") {
		t.Errorf("events %q: want 3 ticks then the end", got)
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("body end: %v", err)
	}
	if v := testutil.ToFloat64(s.metrics.requests.WithLabelValues("events", "200")); v != 1 {
		t.Errorf("events 200 count %v", v)
	}
	bad, err := http.Get(base + "/events?interval=1ms")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bad.Body)
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `interval "1ms": want a duration from 10ms to 10s`) {
		t.Errorf("bad interval: %d %q", bad.StatusCode, b)
	}
}
