// Package bounded reads a peer's bytes with a bound that fails the read,
// never one that cuts it short silently: a response header read with
// net/http's ReadResponse, which bounds nothing (loadgen's one-shot
// clients, the embedded proxy's upstream reads), and a response body read
// whole (the recorder's scrapes and Prometheus queries, the lab's admin
// endpoints). It owns the counting readers; each bound and error is the
// caller's, as is when a header ends.
package bounded

import "io"

// Header reads R with at most Left more bytes while Left is 0 or more,
// failing with Err once they are read (counted from the connection, as
// net/http's Transport counts its MaxResponseHeaderBytes); with Left below
// 0 (Lift) it reads through.
type Header struct {
	R    io.Reader
	Left int64
	Err  error
}

func (h *Header) Read(p []byte) (int, error) {
	if h.Left < 0 {
		return h.R.Read(p)
	}
	if h.Left == 0 {
		return 0, h.Err
	}
	if int64(len(p)) > h.Left {
		p = p[:h.Left]
	}
	n, err := h.R.Read(p)
	h.Left -= int64(n)
	return n, err
}

// Reached reports whether the bound was read to its end: whatever failed
// then, the header was too long.
func (h *Header) Reached() bool { return h.Left == 0 }

// Lift ends the bound: the body reads through.
func (h *Header) Lift() { h.Left = -1 }

// Body is io.LimitReader that fails with Err instead of pretending R
// ended, once R holds a byte more than Left: a body of exactly the bound
// reads whole, a longer one is an error rather than cut short.
type Body struct {
	R    io.Reader
	Left int64
	Err  error
}

func (b *Body) Read(p []byte) (int, error) {
	if b.Left <= 0 {
		var one [1]byte
		n, err := b.R.Read(one[:])
		if n > 0 {
			return 0, b.Err
		}
		return 0, err
	}
	if int64(len(p)) > b.Left {
		p = p[:b.Left]
	}
	n, err := b.R.Read(p)
	b.Left -= int64(n)
	return n, err
}
