package hops

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestTakeFindsWhatTheFirstDumpMissed: a connection the first dump of a
// sample does not have (here the dump is told to miss it, as a walk of the
// table can miss one set up meanwhile) is in the sample from the second
// dump, all its bytes its movement, so no check judges its download as if
// it had none; a connection both dumps have is looked up, unmoved.
func TestTakeFindsWhatTheFirstDumpMissed(t *testing.T) {
	slowlabtest.Timing(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Read(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	cliAddr := netip.MustParseAddrPort(cli.LocalAddr().String())
	for _, missed := range []bool{false, true} {
		dumps := 0
		s := &Sampler{Ports: []uint16{port}, Dump: func() ([]Socket, error) {
			dumps++
			all, err := DumpTCP([]uint16{port}, false)
			if missed && dumps == 1 {
				return nil, err
			}
			return all, err
		}}
		smp, err := s.Take(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(smp.Sockets) != 2 || len(smp.Moved) != 2 || dumps != 2 {
			t.Fatalf("missed %t: %d sockets, %d movements after %d dumps, want the connection's two ends after two", missed, len(smp.Sockets), len(smp.Moved), dumps)
		}
		for i, so := range smp.Sockets {
			want := int64(0)
			if missed {
				want = written(so) + int64(so.BytesReceived)
				if so.Local == cliAddr && want < 1000 {
					t.Errorf("client end %+v: want its 1000 bytes received", so)
				}
			}
			if smp.Moved[i] != want {
				t.Errorf("missed %t: %v moved %d, want %d", missed, so.Local, smp.Moved[i], want)
			}
		}
	}
}
