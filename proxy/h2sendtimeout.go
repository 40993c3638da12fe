package proxy

import (
	"errors"
	"net/http"
	"os"
	"time"
)

// streamSendTimeout is send_timeout for one HTTP/2 stream. The
// connection's own timeout (sendTimeoutConn) cannot see a stalled stream:
// the connection keeps moving other streams' frames and the client's
// window updates while this stream's writes wait for a window the client
// keeps closed. NGINX times such a stream out after send_timeout and
// resets it; so does this: every write gets a deadline send_timeout from
// its start (http.ResponseController.SetWriteDeadline, which the HTTP/2
// server enforces per stream), and a write past it fails with
// ErrSendTimeout.
type streamSendTimeout struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s streamSendTimeout) Write(p []byte) (int, error) {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil {
		return 0, clientError{err}
	}
	n, err := s.w.Write(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return n, clientError{ErrSendTimeout}
	}
	return n, err
}
