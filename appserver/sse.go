package appserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limits of GET /events, the same in all four apps: beyond them a value is
// a typo, answered 400.
const (
	MinSSEInterval     = 10 * time.Millisecond
	MaxSSEInterval     = 10 * time.Second
	DefaultSSEInterval = 100 * time.Millisecond
	MaxSSEDuration     = 5 * time.Minute
	DefaultSSEDuration = 10 * time.Second
	MaxSSEPad          = 64 << 10
)

// AccelBufferingHeader is NGINX's per-response switch of proxy buffering:
// an upstream response carrying "no" is passed on unbuffered whatever
// proxy_buffering says, "yes" buffered. /events?accel=no|yes sets it.
const AccelBufferingHeader = "X-Accel-Buffering"

// SSEParams is what a GET /events asks for.
type SSEParams struct {
	Interval, Duration time.Duration
	Pad                int    // bytes of padding in each event's data
	Accel              string // "", "yes" or "no": X-Accel-Buffering
}

// Events is how many tick events the stream sends: one at once, then one
// every Interval while less than Duration has passed.
func (p SSEParams) Events() int {
	if p.Duration <= 0 {
		return 0
	}
	return int((p.Duration + p.Interval - 1) / p.Interval)
}

// Query is the request's query string.
func (p SSEParams) Query() string {
	q := fmt.Sprintf("interval=%s&duration=%s", p.Interval, p.Duration)
	if p.Pad > 0 {
		q += "&pad=" + strconv.Itoa(p.Pad)
	}
	if p.Accel != "" {
		q += "&accel=" + p.Accel
	}
	return q
}

// ParseSSEQuery reads /events' query: interval (a Go duration, 10ms to
// 10s, default 100ms), duration (0s to 5m, default 10s), pad (0 to 65536
// bytes) and accel (yes or no). Its errors are the 400's text, the same in
// every app.
func ParseSSEQuery(get func(string) string) (SSEParams, error) {
	p := SSEParams{Interval: DefaultSSEInterval, Duration: DefaultSSEDuration}
	if q := get("interval"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < MinSSEInterval || d > MaxSSEInterval {
			return p, fmt.Errorf("interval %q: want a duration from %s to %s", q, MinSSEInterval, MaxSSEInterval)
		}
		p.Interval = d
	}
	if q := get("duration"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 || d > MaxSSEDuration {
			return p, fmt.Errorf("duration %q: want a duration from 0s to %s", q, MaxSSEDuration)
		}
		p.Duration = d
	}
	if q := get("pad"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > MaxSSEPad {
			return p, fmt.Errorf("pad %q: want 0..%d bytes", q, MaxSSEPad)
		}
		p.Pad = n
	}
	switch q := get("accel"); q {
	case "", "yes", "no":
		p.Accel = q
	default:
		return p, fmt.Errorf("accel %q: want yes or no", q)
	}
	return p, nil
}

// SSEEvent is one tick event as every app writes it: its sequence number
// and the server's wall clock in unix microseconds when it was written,
// with pad bytes of padding:
//
//	id: 3
//	data: {"seq": 3, "t_us": 1712345678123456}
//
// (with padding: ..., "pad": "aaaa"}). The stream ends with
//
//	event: end
//	data: {"events": N, "t_us": T}
func SSEEvent(seq int, tUS int64, pad string) []byte {
	if pad != "" {
		return fmt.Appendf(nil, "id: %d\ndata: {\"seq\": %d, \"t_us\": %d, \"pad\": \"%s\"}\n\n", seq, seq, tUS, pad)
	}
	return fmt.Appendf(nil, "id: %d\ndata: {\"seq\": %d, \"t_us\": %d}\n\n", seq, seq, tUS)
}

// SSEEnd is the event that ends a complete stream.
func SSEEnd(events int, tUS int64) []byte {
	return fmt.Appendf(nil, "event: end\ndata: {\"events\": %d, \"t_us\": %d}\n\n", events, tUS)
}

// events streams Server-Sent Events: a tick at once and then every
// interval, each flushed to the socket as it is written, then the end
// event and the end of the (chunked) body. The worker is held for the
// whole stream, and the request counts as held (as a long-poll).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, err := ParseSSEQuery(r.URL.Query().Get)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		s.done("events", http.StatusBadRequest, start)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if p.Accel != "" {
		h.Set(AccelBufferingHeader, p.Accel)
	}
	serverTiming(w, start)
	rc := http.NewResponseController(w)
	pad := strings.Repeat("a", p.Pad)
	n := p.Events()
	t := time.NewTimer(0)
	defer t.Stop()
	for seq := 0; seq <= n; seq++ {
		next := start.Add(time.Duration(seq) * p.Interval)
		if seq == n {
			next = start.Add(p.Duration)
		}
		t.Reset(time.Until(next))
		select {
		case <-t.C:
		case <-r.Context().Done():
			s.done("events", statusClientClosed, start)
			return
		}
		ev := SSEEnd(n, time.Now().UnixMicro())
		if seq < n {
			ev = SSEEvent(seq, time.Now().UnixMicro(), pad)
		}
		if _, err := w.Write(ev); err != nil {
			s.done("events", statusClientClosed, start)
			return
		}
		if err := rc.Flush(); err != nil {
			s.done("events", statusClientClosed, start)
			return
		}
	}
	s.done("events", http.StatusOK, start)
}
