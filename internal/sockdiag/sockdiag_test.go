package sockdiag

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// inode is the socket inode of c, from /proc/self/fd.
func inode(t *testing.T, c interface {
	File() (*os.File, error)
}) uint32 {
	t.Helper()
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	var ino uint32
	if _, err := fmt.Sscanf(link, "socket:[%d]", &ino); err != nil {
		t.Fatalf("%s: %v", link, err)
	}
	return ino
}

// TestDumpRealSockets dumps real loopback sockets: filtered to the
// listener's port the dump has the listener and both ends of a connection
// with their states, inodes and TCP_INFO; a state filter keeps only what
// it names; after the client closes first its end is in TIME_WAIT, which
// a dump without TIME_WAIT leaves out and a TIME_WAIT dump finds.
func TestDumpRealSockets(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	cli, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := cli.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	cliAddr := netip.MustParseAddrPort(cli.LocalAddr().String())

	socks, err := Dump(Filter{Ports: []uint16{port}, Info: true}, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	find := func(socks []Socket, local netip.AddrPort) (Socket, bool) {
		i := slices.IndexFunc(socks, func(s Socket) bool { return s.Local == local && s.State != Listen })
		if i < 0 {
			return Socket{}, false
		}
		return socks[i], true
	}
	lst := slices.IndexFunc(socks, func(s Socket) bool { return s.State == Listen })
	if lst < 0 || socks[lst].Local.Port() != port || socks[lst].Inode != inode(t, ln.(*net.TCPListener)) {
		t.Errorf("listener: %d of %+v", lst, socks)
	}
	s, ok := find(socks, netip.MustParseAddrPort(srv.LocalAddr().String()))
	if !ok || s.State != Established || s.Remote != cliAddr || s.Inode != inode(t, srv.(*net.TCPConn)) || !s.HasInfo {
		t.Errorf("server end: %+v (found %t)", s, ok)
	}
	if s.RecvQ != 5 || s.BytesReceived != 5 {
		t.Errorf("server end: receive queue %d, bytes received %d; want the 5 unread bytes", s.RecvQ, s.BytesReceived)
	}
	// bytes_acked counts the SYN too.
	if c, ok := find(socks, cliAddr); !ok || c.State != Established || c.BytesAcked < 5 || c.BytesAcked > 6 {
		t.Errorf("client end: %+v (found %t)", c, ok)
	}
	for _, so := range socks {
		if so.Local.Port() != port && so.Remote.Port() != port {
			t.Errorf("socket %+v: neither port is %d", so, port)
		}
	}

	only, err := Dump(Filter{States: 1 << Listen, Ports: []uint16{port}}, unix.AF_INET)
	if err != nil || len(only) != 1 || only[0].State != Listen || only[0].HasInfo {
		t.Errorf("listeners only, without TCP_INFO: %+v, %v", only, err)
	}

	// The server reads what it was sent (closing with unread data would
	// reset the connection); the client closes first: its end goes to
	// TIME_WAIT.
	if _, err := srv.Read(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	srv.Close()
	noTW := uint32(AllStates &^ (1 << TimeWait))
	var tw []Socket
	if !slowlabtest.Eventually(func() bool {
		tw, err = Dump(Filter{States: 1 << TimeWait, Ports: []uint16{port}}, unix.AF_INET)
		return err == nil && len(tw) == 1
	}) {
		t.Fatalf("TIME_WAIT dump: %+v, %v; want the client's end", tw, err)
	}
	if tw[0].Local != cliAddr || tw[0].State != TimeWait || tw[0].Inode != 0 {
		t.Errorf("TIME_WAIT socket %+v, want the client's end %s without an inode", tw[0], cliAddr)
	}
	rest, err := Dump(Filter{States: noTW, Ports: []uint16{port}}, unix.AF_INET)
	if _, ok := find(rest, cliAddr); err != nil || ok {
		t.Errorf("dump without TIME_WAIT has the client's end (%v)", err)
	}
	if os.Getenv("SLOWLAB_SOCKDIAG_SEEDS") != "" { // refresh the fuzz seeds from this kernel
		n := 0
		dumpRaw(Filter{Ports: []uint16{port}, Info: true}, []uint8{unix.AF_INET}, func(m []byte) {
			n++
			os.WriteFile(filepath.Join("testdata", fmt.Sprintf("msg-%d.bin", n)), m, 0o644)
		})
	}
}

func TestDumpRefusesTooManyPorts(t *testing.T) {
	_, err := Dump(Filter{Ports: make([]uint16, MaxPorts+1)}, unix.AF_INET)
	if err == nil || !strings.Contains(err.Error(), "16 ports, at most 15") {
		t.Errorf("got %v", err)
	}
}

// FuzzParseMsg: no input makes ParseMsg panic, and a message it accepts
// is at least the fixed header, with addresses of its family.
func FuzzParseMsg(f *testing.F) {
	slowlabtest.SeedFiles(f, "msg-*.bin")
	f.Fuzz(func(t *testing.T, d string) {
		s, ok := ParseMsg([]byte(d))
		if ok != (len(d) >= msgSize) {
			t.Fatalf("%d bytes: ok %t", len(d), ok)
		}
		if ok && (!s.Local.Addr().IsValid() || !s.Remote.Addr().IsValid()) {
			t.Fatalf("invalid addresses %+v", s)
		}
	})
}

// TestDumpRcvBuf: a dump that asks for the sockets' memory has each one's
// receive buffer, the kernel's double of the SO_RCVBUF set on it; one that
// does not ask has 0.
func TestDumpRcvBuf(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	cli, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := cli.(*net.TCPConn).SetReadBuffer(8 << 10); err != nil {
		t.Fatal(err)
	}
	cliAddr := netip.MustParseAddrPort(cli.LocalAddr().String())
	for _, mem := range []bool{true, false} {
		socks, err := Dump(Filter{Ports: []uint16{port}, Info: true, MemInfo: mem}, unix.AF_INET)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(socks, func(s Socket) bool { return s.Local == cliAddr })
		if i < 0 {
			t.Fatalf("client end not in %+v", socks)
		}
		if want := map[bool]uint32{true: 16 << 10, false: 0}[mem]; socks[i].RcvBuf != want || !socks[i].HasInfo {
			t.Errorf("MemInfo %t: RcvBuf %d, want %d", mem, socks[i].RcvBuf, want)
		}
	}
}
