package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// quietListener gives a client that does not finish a request's header
// within client_header_timeout nothing back, as NGINX does (it closes the
// connection and only logs the 408); net/http would answer 400 Bad
// Request to a header cut short by its ReadHeaderTimeout. Once a request
// is being handled, its connection writes as usual.
type quietListener struct{ net.Listener }

func (l quietListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &quietConn{Conn: c}, nil
}

// quietConn drops what is written after a read timed out while no request
// was being handled: the server's reply to a header that never came.
type quietConn struct {
	net.Conn
	handling atomic.Int32 // handlers running for requests of this connection (HTTP/2: one a stream)
	aborted  atomic.Bool  // the read deadline is in the distant past: net/http ending its background read, not a timeout
	silenced atomic.Bool
}

// SetReadDeadline notes a deadline in the distant past: net/http sets one
// to stop the read it keeps going while a handler runs, and the timeout
// that read returns is not the client's.
func (c *quietConn) SetReadDeadline(t time.Time) error {
	c.aborted.Store(!t.IsZero() && t.Before(time.Unix(1e9, 0)))
	return c.Conn.SetReadDeadline(t)
}

func (c *quietConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() && c.handling.Load() == 0 && !c.aborted.Load() {
		c.silenced.Store(true)
	}
	return n, err
}

func (c *quietConn) Write(b []byte) (int, error) {
	if c.silenced.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

type quietConnKey struct{}

// withQuietConn is the server's ConnContext: it lets a handler find its
// connection.
func withQuietConn(ctx context.Context, c net.Conn) context.Context {
	if qc, ok := c.(*quietConn); ok {
		return context.WithValue(ctx, quietConnKey{}, qc)
	}
	return ctx
}

// handling marks r's connection as handling a request until the returned
// func is called.
func handling(r *http.Request) func() {
	qc, ok := r.Context().Value(quietConnKey{}).(*quietConn)
	if !ok {
		return func() {}
	}
	qc.handling.Add(1)
	return func() { qc.handling.Add(-1) }
}
