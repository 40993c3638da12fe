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

// A response in the proxy's report before the dump and gone from the one
// after ended meanwhile, maybe after the dump saw the proxy still holding
// some of it: the sample keeps its entry from before, all its bytes its
// movement (so no check judges the download at that sample as if the
// proxy held nothing), and Take tries again for a sample without that
// uncertainty; a response in both reports moved what the two differ by.
func TestTakeKeepsResponseEndedDuringSample(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ended := ProxyBuffer{Client: ap(40000), Memory: 48 << 10, TempFile: 272 << 10, UpstreamRead: 8 << 20, ClientWritten: 8<<20 - 320<<10}
	stays := ProxyBuffer{Client: ap(40001), UpstreamRead: 1 << 20, ClientWritten: 512 << 10}
	for _, endsEveryTry := range []bool{true, false} {
		calls := 0
		s := &Sampler{Ports: []uint16{uint16(ln.Addr().(*net.TCPAddr).Port)}, Proxy: func(context.Context) ([]ProxyBuffer, error) {
			calls++
			moved := stays
			moved.ClientWritten += int64(calls) << 10 // 1 KiB a report
			// The report before each try's dump has the response; the one
			// after, not (or, !endsEveryTry, only the first try's before).
			if calls%2 == 1 && (endsEveryTry || calls == 1) {
				return []ProxyBuffer{ended, moved}, nil
			}
			return []ProxyBuffer{moved}, nil
		}}
		smp, err := s.Take(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got *ProxyBuffer
		for i := range smp.Proxy {
			if smp.Proxy[i].Client == ended.Client {
				got = &smp.Proxy[i]
			} else if smp.Proxy[i].Skew != 1<<10 {
				t.Errorf("ends every try %v: the response in both reports moved %d, want 1 KiB", endsEveryTry, smp.Proxy[i].Skew)
			}
		}
		switch {
		case endsEveryTry && (got == nil || got.Memory != ended.Memory || got.Skew != ended.UpstreamRead+ended.ClientWritten):
			t.Errorf("ended during every try: %+v, want its entry from before, all its bytes its skew", smp.Proxy)
		case !endsEveryTry && (got != nil || calls != 4):
			t.Errorf("ended during the first try: %+v after %d reports, want a second try (4 reports) without it", smp.Proxy, calls)
		}
	}
}
