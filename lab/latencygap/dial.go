package latencygap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/lab/netem"
)

// dialFunc dials as net.Dialer.DialContext does.
type dialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

// parallelDial returns a dial func for the path's server (either of its
// addresses, or another across the path: netem.Path.Across) whose TCP
// connects run at once. netem.Path.DialContext dials on the client
// namespace's one thread, so a page's parallel connects would wait for
// each other's handshakes; here only the socket is made there (a socket
// stays in the namespace it was made in), and the connect runs on the
// caller's goroutine, waiting in Go's poller. cc, when set, is the
// socket's congestion control. UDP (the resolver's queries) goes through
// the path's own dial.
func parallelDial(path *netem.Path, cc string) dialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if network != "tcp" && network != "tcp4" && network != "tcp6" {
			return path.DialContext(ctx, network, address)
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !path.Across(ap.Addr()) || ap.Addr().Is4() != (network != "tcp6") && network != "tcp" {
			return nil, fmt.Errorf("dial %s %s: only tcp to the path's server %s", network, address, path.ServerAddr)
		}
		family, sa := unix.AF_INET6, unix.Sockaddr(&unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()})
		if ap.Addr().Is4() {
			family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
		}
		var fd int
		err = path.Client.Do(func() (err error) {
			fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("dial %s: socket in the client namespace: %w", address, err)
		}
		if cc != "" {
			if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("dial %s: set TCP_CONGESTION %s: %w", address, cc, err)
			}
		}
		if err := unix.Connect(fd, sa); err != nil && !errors.Is(err, unix.EINPROGRESS) {
			unix.Close(fd)
			return nil, fmt.Errorf("dial %s: %w", address, err)
		}
		// A copy of the socket, in the poller: a TCPConn with Nagle off, as
		// net.Dialer's (a request written in pieces, HTTP/2's preface,
		// settings and headers, goes at once).
		f := os.NewFile(uintptr(fd), "tcp "+address)
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", address, err)
		}
		if err := waitConnected(ctx, c); err != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s: %w", address, err)
		}
		return c, nil
	}
}

// waitConnected waits until c's connect ends (the socket turns
// writable), or ctx does, and returns its error.
func waitConnected(ctx context.Context, c net.Conn) error {
	sc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline() // zero without one
	c.SetWriteDeadline(dl)
	stop := context.AfterFunc(ctx, func() { c.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var cerr error
	werr := sc.Write(func(fd uintptr) bool {
		v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		switch {
		case err != nil:
			cerr = err
		case v != 0:
			cerr = unix.Errno(v)
		default:
			if _, err := unix.Getpeername(int(fd)); errors.Is(err, unix.ENOTCONN) {
				return false // still connecting: wait until writable
			}
		}
		return true
	})
	c.SetWriteDeadline(time.Time{})
	if werr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return cmp.Or(werr, cerr)
}
