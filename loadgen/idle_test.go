package loadgen

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleServer accepts on loopback and hands each connection to serve.
func idleServer(t *testing.T, serve func(c *net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); serve(c.(*net.TCPConn)) })
		}
	})
	return ln.Addr().String()
}

func runHolders(t *testing.T, h IdleHolders) []HeldConn {
	t.Helper()
	out, err := h.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != h.N {
		t.Fatalf("%d outcomes for %d connections", len(out), h.N)
	}
	return out
}

func TestIdleHoldersEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      HoldMode
		serve     func(c *net.TCPConn)
		want      HoldEnd
		firstLine string
	}{
		{"fin", HoldIdle, func(c *net.TCPConn) {}, EndFIN, ""},
		{"408", HoldIdle, func(c *net.TCPConn) { c.Write([]byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n")) }, EndFIN, "HTTP/1.1 408 Request Timeout"},
		// Reset once the client sent a byte: a reset before the client saw
		// its connect complete would fail the connect instead.
		{"reset", HoldSlowloris, func(c *net.TCPConn) { c.Read(make([]byte, 1)); c.SetLinger(0) }, EndReset, ""},
		// The server holds the connection until the client closes it.
		{"bound", HoldIdle, func(c *net.TCPConn) { c.Read(make([]byte, 1)) }, EndBound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := idleServer(t, tc.serve)
			out := runHolders(t, IdleHolders{Addr: addr, Mode: tc.mode, N: 3, Hold: 300 * time.Millisecond})
			for _, r := range out {
				if r.End != tc.want || r.Err != nil || r.FirstLine != tc.firstLine {
					t.Errorf("conn %d: end %s (%v), first line %q; want %s, %q", r.Seq, r.End, r.Err, r.FirstLine, tc.want, tc.firstLine)
				}
				if tc.want == EndBound && r.Held < 300*time.Millisecond {
					t.Errorf("conn %d: held %v, less than the 300ms bound it ended at", r.Seq, r.Held)
				}
			}
		})
	}
}

// A slowloris connection sends its header a byte at a time, never ending
// it; the server here closes once it has 40 bytes.
func TestSlowlorisSendsHeaderBytes(t *testing.T) {
	got := make(chan string, 1)
	addr := idleServer(t, func(c *net.TCPConn) {
		// Exactly 40 bytes, however the client's bytes were split or
		// coalesced into segments on the way (one read may return
		// several bytes on a loaded machine).
		b := make([]byte, 40)
		n, _ := io.ReadFull(c, b)
		got <- string(b[:n])
	})
	out := runHolders(t, IdleHolders{Addr: addr, Mode: HoldSlowloris, N: 1, Hold: time.Minute, ByteEvery: time.Millisecond})
	b := <-got
	want := slowlorisHead + slowlorisLine
	if !strings.HasPrefix(want, b) || len(b) != 40 {
		t.Errorf("server read %q, want the first 40 bytes of %q", b, want)
	}
	if r := out[0]; r.End != EndFIN && r.End != EndReset || r.Sent < 40 || strings.Contains(b, "\r\n\r\n") {
		t.Errorf("outcome %+v: want the server's close after at least 40 bytes, the header never ended", r)
	}
}

// Connections come from each source address in turn.
func TestIdleHoldersSources(t *testing.T) {
	var mu sync.Mutex
	peers := map[string]int{}
	addr := idleServer(t, func(c *net.TCPConn) {
		ap := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		mu.Lock()
		peers[ap.Addr().String()]++
		mu.Unlock()
	})
	srcs := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	out := runHolders(t, IdleHolders{Addr: addr, Mode: HoldIdle, N: 6, Hold: time.Minute, Sources: srcs})
	for _, r := range out {
		if r.End != EndFIN {
			t.Errorf("conn %d: %s %v", r.Seq, r.End, r.Err)
		}
		if want := srcs[r.Seq%2].String(); !strings.HasPrefix(r.Source, want+":") {
			t.Errorf("conn %d from %s, want %s", r.Seq, r.Source, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peers["127.0.0.2"] != 3 || peers["127.0.0.3"] != 3 {
		t.Errorf("server saw %v, want 3 connections from each source", peers)
	}
}

func TestIdleHoldersCancel(t *testing.T) {
	addr := idleServer(t, func(c *net.TCPConn) { c.Read(make([]byte, 1)) })
	ctx, cancel := context.WithCancel(context.Background())
	h := IdleHolders{Addr: addr, Mode: HoldIdle, N: 4, Hold: time.Hour, OnConnected: func(int) { cancel() }}
	out, err := h.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out {
		if r.End != EndCanceled {
			t.Errorf("conn %d: %s, want canceled", r.Seq, r.End)
		}
	}
}

func TestIdleHoldersValidate(t *testing.T) {
	ok := IdleHolders{Addr: "127.0.0.1:80", Mode: HoldIdle, N: 1, Hold: time.Second}
	for _, tc := range []struct {
		edit func(*IdleHolders)
		want string
	}{
		{func(h *IdleHolders) { h.Addr = "10.0.0.1:80" }, `addr "10.0.0.1:80": must be in`},
		{func(h *IdleHolders) { h.N = MaxHeldConns + 1 }, "connections 10001: allowed 0 to 10000"},
		{func(h *IdleHolders) { h.Hold = -time.Second }, "hold -1s: allowed more than 0 up to 1h0m0s"},
		{func(h *IdleHolders) { h.Hold = 48 * time.Hour }, "hold 48h0m0s: allowed more than 0 up to 1h0m0s"},
		{func(h *IdleHolders) { h.Mode = "flood" }, `mode "flood": allowed [idle slowloris]`},
		{func(h *IdleHolders) { h.Sources = []netip.Addr{netip.MustParseAddr("192.168.1.2")} }, "sources[0] 192.168.1.2: must be an IPv4 address in 127.0.0.0/8"},
		{func(h *IdleHolders) { h.Addr = "staging.example:80" }, `addr "staging.example:80": want IP:PORT`},
		{func(h *IdleHolders) { h.Addr, h.AllowRemote = "staging.example", true }, `addr "staging.example": want HOST:PORT`},
	} {
		h := ok
		tc.edit(&h)
		if err := h.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	// Another host, by address or name, with AllowRemote (validated only:
	// the tests send nothing off loopback).
	for _, addr := range []string{"10.0.0.1:80", "staging.example:8080", "[2001:db8::1]:443"} {
		h := ok
		h.Addr, h.AllowRemote = addr, true
		if err := h.Validate(); err != nil {
			t.Errorf("%s with AllowRemote: %v", addr, err)
		}
	}
}
