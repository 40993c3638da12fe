package slowlabtest

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/slowlab/slowlab/internal/loopback"
)

// ResolveWith makes the loopback check resolve names from hosts for the
// rest of the test (a name absent from it does not resolve). Tests that
// use it must not run in parallel.
func ResolveWith(t testing.TB, hosts map[string][]string) {
	t.Helper()
	orig := loopback.Lookup
	t.Cleanup(func() { loopback.Lookup = orig })
	loopback.Lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		addrs, ok := hosts[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

// RefusedAddr is a 127.0.0.1 host:port that refuses connections for the
// rest of the test (loopback.Refused, released at cleanup). Unlike the
// port of a listener closed at once, no other test can start listening
// there meanwhile and answer, or hang, a request meant to be refused.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	addr, release, err := loopback.Refused()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	return addr
}
