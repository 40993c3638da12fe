package appserver

import (
	"fmt"
	"net/http"
	"time"
)

// LastByteTiming wraps h so that, after h returns, the response is flushed
// to the socket and Server-Timing: app;dur=<ms> is sent again as a
// trailer, measured from the handler's start to that flush: the server's
// own view of its processing through the last byte written. Its
// Server-Timing header is taken when the header is written, before the
// body; the two differ when the body does not fit in the socket's send
// buffer (a new connection's holds about 50 KB with Linux's default
// tcp_wmem), so the write waits for ACKs and the last-byte time includes
// round trips of slow start. Trailers need chunked framing, so responses
// carry no Content-Length.
func LastByteTiming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		cw := &chunkedWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		cw.prepare() // also when h wrote nothing
		http.NewResponseController(w).Flush()
		w.Header().Set(http.TrailerPrefix+"Server-Timing", fmt.Sprintf("app;dur=%.3f", float64(time.Since(start))/float64(time.Millisecond)))
	})
}

// chunkedWriter drops Content-Length before the header is written:
// net/http sends trailers only with chunked framing.
type chunkedWriter struct {
	http.ResponseWriter
	wrote bool
}

func (c *chunkedWriter) prepare() {
	if !c.wrote {
		c.wrote = true
		c.Header().Del("Content-Length")
	}
}

func (c *chunkedWriter) WriteHeader(code int) { c.prepare(); c.ResponseWriter.WriteHeader(code) }

func (c *chunkedWriter) Write(b []byte) (int, error) { c.prepare(); return c.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController reach the real writer.
func (c *chunkedWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
