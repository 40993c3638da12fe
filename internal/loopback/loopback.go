// Package loopback owns the one rule for where slowlab may send traffic
// unless told otherwise: a loopback address, 127.0.0.0/8 or ::1. An IP
// literal is checked as is (an IPv4-mapped address as its IPv4 address); a
// name, localhost included, is resolved, because /etc/hosts and DNS decide
// what it means, and every address it resolves to must be loopback.
//
// It checks hosts; the load generator's dial guard, the proxy's upstream
// check and the CLI's flag checks decide what to do with the answer.
package loopback

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Ranges names what counts as loopback, for error messages.
const Ranges = "(127.0.0.0/8, ::1, localhost)"

// Lookup resolves a host name for Check. It is a variable so tests can
// resolve names without a resolver (see slowlabtest.ResolveWith).
var Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// LookupTimeout bounds the resolution of a name.
const LookupTimeout = 10 * time.Second

// Addr reports whether ip is in 127.0.0.0/8 or is ::1.
func Addr(ip netip.Addr) bool { return ip.Unmap().IsLoopback() }

// Is reports whether host is a loopback IP literal, or a name whose every
// address is loopback.
func Is(host string) bool { return Check(host) == nil }

// Check returns nil when host is loopback, else an error naming host and
// the address that is not.
func Check(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !Addr(ip) {
			return fmt.Errorf("%s is not a loopback address %s", host, Ranges)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), LookupTimeout)
	defer cancel()
	addrs, err := Lookup(ctx, host)
	if err != nil {
		return fmt.Errorf("%s: cannot resolve it to check that it is a loopback address %s: %v", host, Ranges, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%s resolves to no address, so it is not a loopback address %s", host, Ranges)
	}
	for _, ip := range addrs {
		if !Addr(ip) {
			return fmt.Errorf("%s resolves to %s, which is not a loopback address %s", host, ip.Unmap(), Ranges)
		}
	}
	return nil
}

// Refused reserves a TCP port on 127.0.0.1 where nothing listens: a
// socket bound to it, never listening, so a connection there is refused
// (the kernel answers with a reset) for as long as the port is held, and
// no other socket can take the port meanwhile (the binding does not set
// SO_REUSEADDR). It is how a test names an address that refuses: a
// listener closed at once frees its port for whatever binds next, on a
// machine running other tests beside it, and a request there may then be
// answered, or left waiting, by something else. release frees the port.
func Refused() (addr string, release func() error, err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("reserve a refusing port: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("reserve a refusing port: bind: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("reserve a refusing port: %w", err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), func() error { return syscall.Close(fd) }, nil
}
