package netem

import (
	"net"
	"sync"
)

// bothListener accepts from two listeners (the server's IPv4 and IPv6
// ones, on the same port) as one.
type bothListener struct {
	lns   [2]net.Listener
	conns chan accepted
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// accepted is one Accept's result.
type accepted struct {
	c   net.Conn
	err error
}

var _ net.Listener = (*bothListener)(nil)

func newBothListener(a, b net.Listener) *bothListener {
	l := &bothListener{lns: [2]net.Listener{a, b}, conns: make(chan accepted), done: make(chan struct{})}
	for _, ln := range l.lns {
		l.wg.Add(1)
		go l.accept(ln)
	}
	return l
}

// accept hands ln's connections and errors to Accept until Close.
func (l *bothListener) accept(ln net.Listener) {
	defer l.wg.Done()
	for {
		c, err := ln.Accept()
		select {
		case l.conns <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

// Accept returns the next connection of either listener.
func (l *bothListener) Accept() (net.Conn, error) {
	select {
	case a := <-l.conns:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes both listeners and waits for their accept loops.
func (l *bothListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		for _, ln := range l.lns {
			if cerr := ln.Close(); err == nil {
				err = cerr
			}
		}
		l.wg.Wait()
	})
	return err
}

// Addr is the IPv4 listener's address (the IPv6 one has its port).
func (l *bothListener) Addr() net.Addr { return l.lns[0].Addr() }
