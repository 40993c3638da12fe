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
