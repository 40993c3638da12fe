package loadgen

import (
	"bufio"
	"io"
	"sync"
)

// LineWriter writes a load generator child's lines to its stdout: from
// any goroutine, each line whole and flushed as it is written (so a kill
// loses none already written), and after the first error none more; Err
// is that error.
type LineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

// NewLineWriter writes lines to w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: bufio.NewWriter(w)} }

// Line writes b (one line, its newline included), or b's encoding error.
func (l *LineWriter) Line(b []byte, encodeErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if l.err = encodeErr; l.err == nil {
		if _, l.err = l.w.Write(b); l.err == nil {
			l.err = l.w.Flush()
		}
	}
}

// Err is the first error a line met.
func (l *LineWriter) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
