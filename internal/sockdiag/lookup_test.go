package sockdiag

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pair is a real loopback connection, its client end's receive buffer
// set, with 5 bytes the server wrote queued at the client.
func pair(t testing.TB) (ln net.Listener, cli, srv net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if cli, err = net.Dial("tcp4", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	if err := cli.(*net.TCPConn).SetReadBuffer(8 << 10); err != nil {
		t.Fatal(err)
	}
	if srv, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if _, err := srv.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	return ln, cli, srv
}

// TestLookupPairFindsWhatADumpDoes looks up a dump's sockets of a real
// connection: both passes have both ends with the dump's counts, TCP_INFO
// and receive buffer; a socket that was never there, and both ends of a
// connection reset before the lookup (closed with unread data), are in
// neither pass, though the kernel answers the server end's with its
// listener.
func TestLookupPairFindsWhatADumpDoes(t *testing.T) {
	ln, cli, _ := pair(t)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	var dump []Socket
	// The 5 bytes are in flight until the client's kernel has them.
	for range 1000 {
		var err error
		if dump, err = Dump(Filter{States: 1 << Established, Ports: []uint16{port}, Info: true, MemInfo: true}, unix.AF_INET); err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(dump, func(s Socket) bool { return s.RecvQ == 5 }); i >= 0 && len(dump) == 2 {
			break
		}
	}
	if len(dump) != 2 {
		t.Fatalf("dump %+v, want the connection's two ends", dump)
	}
	// The other connection's ends are gone once its client resets it; its
	// server end's address pair then reaches its listener, which the
	// kernel answers with.
	_, other, otherSrv := pair(t)
	gone := Socket{Local: netip.MustParseAddrPort(other.LocalAddr().String()), Remote: netip.MustParseAddrPort(other.RemoteAddr().String())}
	goneSrv := Socket{Local: gone.Remote, Remote: gone.Local}
	never := Socket{Local: netip.MustParseAddrPort("127.0.0.1:1"), Remote: netip.MustParseAddrPort("127.0.0.1:2")}
	other.Close()
	for range 1000 {
		if _, err := otherSrv.Read(make([]byte, 1)); err != nil {
			break // the reset reached it
		}
	}
	first, second, err := LookupPair(append(slices.Clone(dump), gone, goneSrv, never), Filter{Info: true, MemInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	cliAddr := netip.MustParseAddrPort(cli.LocalAddr().String())
	for pass, got := range [][]Socket{first, second} {
		if len(got) != 2 {
			t.Fatalf("pass %d: %+v, want the two ends of the open connection only", pass, got)
		}
		for i, s := range got {
			d := dump[i]
			if s.Local != d.Local || s.Remote != d.Remote || s.Inode != d.Inode || !s.HasInfo ||
				s.BytesReceived != d.BytesReceived || s.BytesAcked != d.BytesAcked || s.RecvQ != d.RecvQ || s.RcvBuf != d.RcvBuf {
				t.Errorf("pass %d: %+v, the dump had %+v", pass, s, d)
			}
			if s.Local == cliAddr && (s.RecvQ != 5 || s.RcvBuf != 16<<10) {
				t.Errorf("pass %d: client end %+v: want 5 bytes queued, a 16 KiB buffer", pass, s)
			}
		}
	}
}

// TestLookupPairIPv6 looks up both ends of a connection on ::1.
func TestLookupPairIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp6", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, b := netip.MustParseAddrPort(cli.LocalAddr().String()), netip.MustParseAddrPort(cli.RemoteAddr().String())
	first, second, err := LookupPair([]Socket{{Local: a, Remote: b}, {Local: b, Remote: a}}, Filter{Info: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || len(second) != 2 || first[0].Local != a || second[1].Local != b || !second[0].HasInfo {
		t.Errorf("passes %+v and %+v, want both ends", first, second)
	}
}

// TestLookupPairBounds: no sockets is no request; more than MaxLookup is
// refused; more than one sendto's worth is looked up chunk by chunk.
func TestLookupPairBounds(t *testing.T) {
	if a, b, err := LookupPair(nil, Filter{}); a != nil || b != nil || err != nil {
		t.Errorf("no sockets: %v %v %v", a, b, err)
	}
	if _, _, err := LookupPair(make([]Socket, MaxLookup+1), Filter{}); err == nil || !strings.Contains(err.Error(), "at most 4096") {
		t.Errorf("too many: %v", err)
	}
	ln, cli, _ := pair(t)
	_ = ln
	a, b := netip.MustParseAddrPort(cli.LocalAddr().String()), netip.MustParseAddrPort(cli.RemoteAddr().String())
	many := make([]Socket, 3*lookupChunk+1)
	for i := range many {
		many[i] = Socket{Local: netip.MustParseAddrPort("127.0.0.1:1"), Remote: netip.MustParseAddrPort("127.0.0.1:2")}
	}
	many[2*lookupChunk+5] = Socket{Local: a, Remote: b}
	first, second, err := LookupPair(many, Filter{Info: true, MemInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || len(second) != 1 || second[0].Local != a {
		t.Errorf("passes %+v and %+v, want the one real socket", first, second)
	}
}

// BenchmarkLookupPair is both passes over a connection's two ends: what a
// hop sample costs besides its one Dump (BenchmarkDumpTCP in hops).
func BenchmarkLookupPair(b *testing.B) {
	_, cli, _ := pair(b)
	x, y := netip.MustParseAddrPort(cli.LocalAddr().String()), netip.MustParseAddrPort(cli.RemoteAddr().String())
	socks := []Socket{{Local: x, Remote: y}, {Local: y, Remote: x}}
	b.ReportAllocs()
	for b.Loop() {
		if f, s, err := LookupPair(socks, Filter{Info: true, MemInfo: true}); err != nil || len(f) != 2 || len(s) != 2 {
			b.Fatalf("%d and %d sockets, %v", len(f), len(s), err)
		}
	}
}
