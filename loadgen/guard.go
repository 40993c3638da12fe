package loadgen

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"syscall"

	"github.com/slowlab/slowlab/internal/loopback"
)

// ErrNotLoopback is wrapped by the error of a connection the dial guard
// refused because its address is not loopback.
var ErrNotLoopback = errors.New("not a loopback address")

// CheckTarget validates a target URL: http only, a host, and unless
// allowRemote, a loopback host. An IP literal must be in 127.0.0.0/8 or
// ::1; a name (localhost included, since /etc/hosts or DNS decide what it
// means) is resolved and every address it resolves to must be. The check
// does not bind later lookups, so Client and SlowReader also refuse, at
// connect time, any address that is not loopback.
func CheckTarget(raw string, allowRemote bool) (*url.URL, error) {
	return checkTarget(raw, allowRemote, "http")
}

// CheckH2Target is CheckTarget for a target reached over HTTP/2 (DialH2):
// http:// (cleartext with prior knowledge) or https:// (TLS with ALPN
// h2).
func CheckH2Target(raw string, allowRemote bool) (*url.URL, error) {
	return checkTarget(raw, allowRemote, "http", "https")
}

func checkTarget(raw string, allowRemote bool, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("target %q: not a URL: %v", raw, err)
	}
	if !slices.Contains(schemes, u.Scheme) {
		return nil, fmt.Errorf("target %q: scheme %q not supported (want http://HOST:PORT/PATH)", raw, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("target %q: no host (want http://HOST:PORT/PATH)", raw)
	}
	if allowRemote {
		return u, nil
	}
	if err := loopback.Check(host); err != nil {
		return nil, fmt.Errorf("target %q: %v; pass --allow-remote to load another host", raw, err)
	}
	return u, nil
}

// IsLoopback reports whether host is a loopback IP literal, or a name
// whose every address is loopback.
func IsLoopback(host string) bool { return loopback.Is(host) }

// isLoopbackAddr reports whether ip is in 127.0.0.0/8 or is ::1 (an
// IPv4-mapped address counts as its IPv4 address). It is a variable so a
// test can check that a dialer is guarded without connecting to another
// host: it makes 127.0.0.1 count as remote.
var isLoopbackAddr = loopback.Addr

// dialGuard returns a net.Dialer Control function that refuses to connect
// to an address that is not loopback, unless allowRemote (then nil). It
// runs after name resolution, on the address about to be connected, so no
// lookup (DNS rebinding included) can turn a checked name into a remote
// connection.
func dialGuard(allowRemote bool) func(network, address string, c syscall.RawConn) error {
	if allowRemote {
		return nil
	}
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%s: %w (cannot parse it: %v)", address, ErrNotLoopback, err)
		}
		if !isLoopbackAddr(ap.Addr()) {
			return fmt.Errorf("%s: %w (127.0.0.0/8, ::1); set AllowRemote to connect to another host", ap.Addr().Unmap(), ErrNotLoopback)
		}
		return nil
	}
}

// chainControl runs each non-nil Control function in turn; nil if none.
func chainControl(fns ...func(network, address string, c syscall.RawConn) error) func(network, address string, c syscall.RawConn) error {
	var set []func(network, address string, c syscall.RawConn) error
	for _, f := range fns {
		if f != nil {
			set = append(set, f)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return func(network, address string, c syscall.RawConn) error {
		for _, f := range set {
			if err := f(network, address, c); err != nil {
				return err
			}
		}
		return nil
	}
}
