package appserver

import (
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// dispatcher shares one app socket out among gthread workers the way
// Gunicorn's forked workers share theirs: each accepted connection goes to
// a worker picked at random among those below their connection limit,
// whether or not that worker has a free thread. Gunicorn's workers race
// for the socket independently, so which one wins a connection is chance;
// goroutines accepting on one descriptor are not independent (one holds
// the descriptor's lock while it waits and takes nearly every connection),
// hence the explicit draw. When every worker is at its limit the dispatcher
// stops accepting and connections wait in the kernel backlog.
type dispatcher struct {
	ln      net.Listener
	workers []*workerListener
	room    chan struct{} // a worker fell below its limit
	done    chan struct{}
	once    sync.Once
}

func newDispatcher(ln net.Listener, workers, limit int) *dispatcher {
	d := &dispatcher{ln: ln, room: make(chan struct{}, 1), done: make(chan struct{})}
	for range workers {
		d.workers = append(d.workers, &workerListener{d: d, conns: make(chan net.Conn), open: make(chan struct{}, limit)})
	}
	return d
}

// run accepts until the app socket is closed or stop is called.
func (d *dispatcher) run() {
	defer d.stop()
	for {
		if !d.waitRoom() {
			return
		}
		c, err := d.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of descriptors and the like: retry shortly, as net/http does
			select {
			case <-time.After(5 * time.Millisecond):
				continue
			case <-d.done:
				return
			}
		}
		w := d.pick()
		select {
		case w.open <- struct{}{}: // reserved by pick's check; cannot block long
		case <-d.done:
			c.Close()
			return
		}
		select {
		case w.conns <- &workerConn{Conn: c, w: w}:
		case <-d.done:
			<-w.open
			c.Close()
			return
		}
	}
}

// waitRoom waits until some worker is below its limit; false when stopped.
func (d *dispatcher) waitRoom() bool {
	for {
		for _, w := range d.workers {
			if len(w.open) < cap(w.open) {
				return true
			}
		}
		select {
		case <-d.room:
		case <-d.done:
			return false
		}
	}
}

// pick draws a worker among those below their limit (any, if none is).
func (d *dispatcher) pick() *workerListener {
	var free []*workerListener
	for _, w := range d.workers {
		if len(w.open) < cap(w.open) {
			free = append(free, w)
		}
	}
	if len(free) == 0 {
		free = d.workers
	}
	return free[rand.IntN(len(free))]
}

func (d *dispatcher) stop() { d.once.Do(func() { close(d.done) }) }

// workerListener is one worker's view of the app socket.
type workerListener struct {
	d     *dispatcher
	conns chan net.Conn
	open  chan struct{} // one token per open connection, cap = limit
}

func (l *workerListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.d.done:
		return nil, net.ErrClosed
	}
}

// Close stops the whole dispatcher: workers shut down together.
func (l *workerListener) Close() error { l.d.stop(); return nil }

func (l *workerListener) Addr() net.Addr { return l.d.ln.Addr() }

// workerConn gives its worker's connection token back when closed.
type workerConn struct {
	net.Conn
	w    *workerListener
	once sync.Once
}

func (c *workerConn) Close() error {
	c.once.Do(func() {
		<-c.w.open
		select {
		case c.w.d.room <- struct{}{}:
		default:
		}
	})
	return c.Conn.Close()
}
