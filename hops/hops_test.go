package hops

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// slowRead connects to addr with a small receive buffer and reads
// everything at about rate bytes/s; it returns its local address at once
// (on local) and the bytes read at the end.
func slowRead(t *testing.T, addr string, rate float64, local chan<- netip.AddrPort) (int64, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) })
		return err
	}}
	conn, err := d.Dial("tcp4", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	local <- conn.LocalAddr().(*net.TCPAddr).AddrPort()
	buf := make([]byte, 16<<10)
	start := time.Now()
	var n int64
	for {
		k, err := conn.Read(buf)
		n += int64(k)
		if wait := time.Until(start.Add(time.Duration(float64(n) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// TestDirectConservedOnRealSockets: a server writes 3 MiB to a client
// reading at 1 MiB/s on loopback; every 20 ms sample of the real kernel's
// sockets accounts for every byte the server wrote (and the check judges
// some samples), each hop corrupted fails the check (checkHopMutations),
// and the hops show the bytes waiting in the server's send queue, then
// only in the client's.
func TestDirectConservedOnRealSockets(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it samples a slow download for seconds")
	const size = 3 << 20
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		w := bufio.NewWriterSize(c, 64<<10)
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
		_, err = io.CopyN(w, strings.NewReader(strings.Repeat("x", size)), size)
		if err == nil {
			err = w.Flush()
		}
		served <- err
	}()
	appPort := uint16(ln.Addr().(*net.TCPAddr).Port)
	t0 := time.Now()
	g := (&Sampler{Interval: 20 * time.Millisecond, Ports: []uint16{appPort}}).Start(context.Background(), t0)
	local := make(chan netip.AddrPort, 1)
	n, err := slowRead(t, ln.Addr().String(), 1<<20, local)
	samples, serr := g.Stop()
	if err != nil || serr != nil {
		t.Fatalf("read %d bytes: %v; sampling: %v", n, err, serr)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	la := <-local
	rows := Hops("direct", Path{AppPort: appPort}, []Download{{Client: 0, Local: la, PeerPort: la.Port()}}, samples)
	if err := Check(rows).Err(); err != nil {
		t.Fatal(err)
	}
	// Not the client's receive queue: its 8 KiB can be within twice the
	// skew at every sample on a loaded machine (the recorded run's test
	// requires it).
	checkHopMutations(t, rows, []string{recorder.HopAppWritten, recorder.HopAppSendQueue,
		recorder.HopClientRead, recorder.HopClientRecvBuffer})
	peak := map[string]int64{}
	var last recorder.Hop
	nSamples := 0
	for _, r := range rows {
		peak[r.Hop] = max(peak[r.Hop], r.Bytes)
		if r.Hop == recorder.HopClientRead {
			last = r
			nSamples++
		}
		if r.Source == recorder.HopSourceMissing {
			t.Errorf("direct route: %s missing at %.3f s", r.Hop, r.TS)
		}
	}
	// 3 s at 20 ms is 150 ticks, but a loaded machine delays them (38 on
	// a fresh clone's CI beside other load): what the checks need is
	// samples across the download, not a tick rate.
	if nSamples < 10 {
		t.Fatalf("%d samples of a 3 s download, want at least 10", nSamples)
	}
	// The server's send queue held most of what was not read yet: on
	// loopback, more than the client's small buffer.
	if peak[recorder.HopAppSendQueue] < 256<<10 || peak[recorder.HopClientRecvQueue] == 0 {
		t.Errorf("peaks %v: want bytes waiting in the app's send queue (>256 KiB) and the client's receive queue", peak)
	}
	if last.Bytes < size-(1<<20) {
		t.Errorf("client_read at the last sample %d, want near %d", last.Bytes, size)
	}
	t.Logf("%d samples; peak app_send_queue %d, client_recv_queue %d", nSamples, peak[recorder.HopAppSendQueue], peak[recorder.HopClientRecvQueue])
}
