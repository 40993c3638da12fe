package appserver

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// threadListener hands a gthread worker's accepted connections to a
// thread at once, as Gunicorn 20's gthread worker does: a connection is
// queued for a thread on accept, and the thread that takes it then waits
// for the request however long it takes (measured: idle connections as
// many as the threads starve every other request until they leave;
// --timeout does not end them). So a connection that sends nothing, or
// its header a byte at a time, holds a thread. A connection's first read
// waits for a thread in arrival order (counted as queued), which its
// first request then runs on; later requests on a kept-alive connection
// queue for a thread once their header has arrived, as Gunicorn polls
// kept-alive connections without a thread.
type threadListener struct {
	net.Listener
	slots  chan struct{}
	queued prometheus.Gauge
}

func (l *threadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &threadConn{gateConn: &gateConn{Conn: c, slots: l.slots}, queued: l.queued, closed: make(chan struct{})}, nil
}

// threadConn is a connection that takes a thread before its first read.
type threadConn struct {
	*gateConn
	queued    prometheus.Gauge
	first     sync.Once
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *threadConn) Read(p []byte) (int, error) {
	c.first.Do(func() {
		c.queued.Inc()
		defer c.queued.Dec()
		start := time.Now()
		select {
		case c.slots <- struct{}{}:
			c.waited = time.Since(start)
			c.reserved.Store(true)
			select { // closed meanwhile: Close found nothing to give back
			case <-c.closed:
				if c.reserved.CompareAndSwap(true, false) {
					<-c.slots
				}
			default:
			}
		case <-c.closed:
		}
	})
	return c.gateConn.Read(p)
}

func (c *threadConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.gateConn.Close()
}

// withConn puts a gthread connection's slot reservation into its
// requests' context, for threadedWorker.
func withConn(ctx context.Context, c net.Conn) context.Context {
	switch c := c.(type) {
	case *threadConn:
		return context.WithValue(ctx, connKey{}, c.gateConn)
	case *gateConn:
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}
