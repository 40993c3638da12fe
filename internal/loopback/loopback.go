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
