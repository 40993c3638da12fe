package loadgen

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/net/http2"
)

// h2stream is one stream's state, guarded by its H2Conn's mu. Its bytes
// are counted as flow control counts them (a DATA frame's whole payload,
// padding included): recv came, consumed the reader took and granted
// back; body is the body bytes among recv.
type h2stream struct {
	id     uint32
	path   string
	read   H2Read
	window uint32 // the stream's initial window (H2Options.StreamWindow)
	out    chan H2Result

	start, respStart time.Time
	firstByte        time.Duration
	status           int
	contentLength    int64
	recv, consumed   int64
	body             int64
	ended            bool // END_STREAM came
	lastConsume      time.Time
	stalled, resumed time.Time
	err              error
	done             bool
}

// immediate is a reader that consumes each byte as it comes.
func (s *h2stream) immediate() bool { return s.read.Rate <= 0 && s.read.Stall <= 0 }

// headers takes a HEADERS frame: the response's (an informational 1xx is
// passed over) or its trailers.
func (s *h2stream) headers(f *http2.MetaHeadersFrame, now time.Time) {
	if s.status == 0 {
		st, err := parseH2Status(f.PseudoValue("status"))
		if err != nil {
			s.err = err
			s.ended = true
			return
		}
		if st >= 200 {
			s.status, s.respStart, s.firstByte, s.lastConsume = st, now, now.Sub(s.start), now
			s.contentLength = -1
			if v := headerValue(f, "content-length"); v != "" {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
					s.contentLength = n
				}
			}
		}
	}
	if f.StreamEnded() {
		s.ended = true
	}
}

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.RegularFields() {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}

// data takes a DATA frame of flow bytes (body of them body bytes); an
// immediate reader consumes them at once: the grants to send back.
func (s *h2stream) data(flow, body int64, ended bool, now time.Time) []h2grant {
	if s.status == 0 {
		s.err = fmt.Errorf("DATA before the response's HEADERS")
		s.ended = true
		return []h2grant{{0, uint32(flow)}}
	}
	s.recv += flow
	s.body += body
	s.ended = s.ended || ended
	if !s.immediate() {
		return nil
	}
	return s.take(flow, now)
}

// take consumes n more bytes: the connection's grant, and the stream's
// while it is open.
func (s *h2stream) take(n int64, now time.Time) []h2grant {
	if n <= 0 {
		return nil
	}
	s.consumed += n
	s.lastConsume = now
	g := []h2grant{{0, uint32(n)}}
	if !s.ended {
		g = append(g, h2grant{s.id, uint32(n)})
	}
	return g
}

// consume is a paced or stalling reader's reading up to now: what its
// Rate allows since the response began, none while stalled, all once the
// stall is over.
func (s *h2stream) consume(now time.Time) []h2grant {
	if s.immediate() || s.status == 0 {
		return nil
	}
	r := s.read
	target := s.recv
	if r.Stall > 0 {
		switch {
		case s.stalled.IsZero() && s.consumed >= r.StallAfter:
			s.stalled = now
			return nil
		case s.stalled.IsZero():
			target = min(target, r.StallAfter)
		case s.resumed.IsZero() && now.Sub(s.stalled) < r.Stall:
			return nil
		case s.resumed.IsZero():
			s.resumed = now
			// Reading again opens a window smaller than the protocol's
			// default (a zero window sends nothing until then).
			return append(s.take(target-s.consumed, now), s.opened()...)
		}
	}
	if r.Rate > 0 && s.resumed.IsZero() {
		target = min(target, int64(r.Rate*now.Sub(s.respStart).Seconds()))
	}
	return s.take(target-s.consumed, now)
}

// opened is the grant that widens the stream's window to the protocol's
// default, for a reader that reads as bytes come.
func (s *h2stream) opened() []h2grant {
	if s.ended || s.window >= H2DefaultWindow {
		return nil
	}
	return []h2grant{{s.id, H2DefaultWindow - s.window}}
}

// finished: the response ended and its reader consumed all of it.
func (s *h2stream) finished() bool { return s.ended && s.consumed >= s.recv }

// finish hands the stream's result over, once.
func (s *h2stream) finish(err error, now time.Time) {
	if s.done {
		return
	}
	s.done = true
	if err == nil {
		err = s.err
	}
	end := s.lastConsume
	if err != nil || end.IsZero() {
		end = now
	}
	bytes := min(s.body, s.consumed)
	s.out <- H2Result{StreamID: s.id, Path: s.path, Start: s.start, FirstByte: s.firstByte, Total: end.Sub(s.start),
		Status: s.status, Bytes: bytes, Err: err, Stalled: s.stalled, Resumed: s.resumed,
		Complete: err == nil && s.status == 200 && s.ended && (s.contentLength < 0 || bytes == s.contentLength)}
	close(s.out)
}

// H2ResetError ends a stream the server reset (RST_STREAM), with its
// error code: a proxy's send_timeout, a refused stream beyond its
// concurrency limit.
type H2ResetError struct{ Code http2.ErrCode }

func (e H2ResetError) Error() string { return fmt.Sprintf("the server reset the stream: %v", e.Code) }

// ErrH2Cut ends a stream its reader reset at H2Read.Until.
var ErrH2Cut = errors.New("http/2 stream cut by its reader")
