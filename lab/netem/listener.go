package netem

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
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

// Listen listens on TCP port (0 for any) at the server address, in the
// server namespace, and with IPv6 at ServerAddr6 on the same port too:
// one listener accepting from both.
func (p *Path) Listen(ctx context.Context, port int) (net.Listener, error) {
	lc := net.ListenConfig{Control: p.control}
	var ln, ln6 net.Listener
	err := p.Server.Do(func() (err error) {
		ln, err = lc.Listen(ctx, "tcp4", netip.AddrPortFrom(p.ServerAddr, uint16(port)).String())
		if err != nil || !p.ServerAddr6.IsValid() {
			return err
		}
		at := netip.AddrPortFrom(p.ServerAddr6, uint16(ln.Addr().(*net.TCPAddr).Port))
		if ln6, err = lc.Listen(ctx, "tcp6", at.String()); err != nil {
			ln.Close()
		}
		return err
	})
	if err != nil || ln6 == nil {
		return ln, err
	}
	return newBothListener(ln, ln6), nil
}

// ListenPacket listens on UDP port (0 for any) at the server address, in
// the server namespace (a service such as a resolver beyond the path).
func (p *Path) ListenPacket(ctx context.Context, port int) (net.PacketConn, error) {
	var lc net.ListenConfig
	var pc net.PacketConn
	err := p.Server.Do(func() (err error) {
		pc, err = lc.ListenPacket(ctx, "udp4", netip.AddrPortFrom(p.ServerAddr, uint16(port)).String())
		return err
	})
	return pc, err
}

// DialContext connects from the client namespace to address, which must be
// across the path (Across: traffic never leaves it), over TCP or UDP. Its
// signature fits http.Transport.DialContext and net.Resolver.Dial; dials
// are serialized.
func (p *Path) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	udp := network == "udp" || network == "udp4" || network == "udp6"
	tcp := network == "tcp" || network == "tcp4" || network == "tcp6"
	if err != nil || !p.Across(ap.Addr()) || (!tcp && !udp) {
		return nil, fmt.Errorf("dial %s %s: only tcp or udp to the path's server %s", network, address, p.ServerAddr)
	}
	d, network := net.Dialer{Control: p.control}, "tcp4"
	if udp {
		d, network = net.Dialer{}, "udp4"
	}
	if ap.Addr().Is6() {
		network = network[:3] + "6"
	}
	var conn net.Conn
	err = p.Client.Do(func() (err error) {
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// control sets the congestion control algorithm on a new socket.
func (p *Path) control(_, _ string, c syscall.RawConn) error {
	if p.cc == "" {
		return nil
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, p.cc)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set TCP_CONGESTION %s: %w", p.cc, serr)
	}
	return nil
}
