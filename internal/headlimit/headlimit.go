// Package headlimit bounds the bytes a response header may read from a
// connection, for readers of a response with net/http's ReadResponse,
// which bounds nothing: loadgen's one-shot clients and the embedded
// proxy's reads from its upstream. It owns the counting reader; the bound
// and the error are each caller's, as is when the header ends.
package headlimit

import "io"

// Reader reads R with at most Left more bytes while Left is 0 or more,
// failing with Err once they are read (counted from the connection, as
// net/http's Transport counts its MaxResponseHeaderBytes); with Left below
// 0 (Lift) it reads through.
type Reader struct {
	R    io.Reader
	Left int64
	Err  error
}

func (h *Reader) Read(p []byte) (int, error) {
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
func (h *Reader) Reached() bool { return h.Left == 0 }

// Lift ends the bound: the body reads through.
func (h *Reader) Lift() { h.Left = -1 }
