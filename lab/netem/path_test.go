package netem

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/netem/netemtest"
)

// requireRoot skips a test that needs namespaces when not root, unless
// CI=true, where it must run.
func requireRoot(t *testing.T) {
	t.Helper()
	slowlabtest.RequireRoot(t, "namespaces (CAP_SYS_ADMIN, CAP_NET_ADMIN)")
}

// newPath creates a path and checks, when the test ends, that nothing of
// it is left.
func newPath(t *testing.T, c Config) *Path {
	t.Helper()
	procs := runtime.GOMAXPROCS(0)
	p, err := New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		netemtest.CheckNothingLeft(t)
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Errorf("GOMAXPROCS %d after Close, was %d", got, procs)
		}
	})
	return p
}

// TestTUNDelayLine sends UDP datagrams from the client namespace to the
// server namespace over the TUN delay line (10 ms each way): they arrive
// in order, no sooner than 10 ms after they were sent, and the line
// accounts for every one of them in its lateness. How late it is depends
// on the machine's load (a loaded 2-core CI machine saw p99 1-5 ms), so
// the test logs it and asserts no upper bound: reporting a late line as
// invalid is the experiment's job, tested in latencygap.
func TestTUNDelayLine(t *testing.T) {
	slowlabtest.Timing(t)
	requireRoot(t)
	const delay = 10 * time.Millisecond
	p := newPath(t, Config{Method: MethodTUN, Delay: delay})
	if p.Method != MethodTUN {
		t.Fatalf("method %s, want tun", p.Method)
	}
	var rx, tx *net.UDPConn
	err := p.Server.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ServerAddr, 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	// Room for every datagram: a reader starved on a loaded machine must
	// not drop any at its socket, which is not the line's doing.
	if err := rx.SetReadBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	err = p.Client.Do(func() (err error) {
		tx, err = net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()

	const n = 300
	got := make(chan []time.Duration, 1)
	go func() {
		var delays []time.Duration
		buf := make([]byte, 2000)
		rx.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
		for i := 0; i < n; i++ {
			m, err := rx.Read(buf)
			if err != nil || m < 12 {
				break
			}
			if seq := binary.BigEndian.Uint32(buf); seq != uint32(i) {
				t.Errorf("datagram %d arrived as number %d: order not kept", seq, i)
				break
			}
			delays = append(delays, time.Duration(time.Now().UnixNano()-int64(binary.BigEndian.Uint64(buf[4:]))))
		}
		got <- delays
	}()
	p.TakeLateness()
	msg := make([]byte, 1200)
	for i := range n {
		binary.BigEndian.PutUint32(msg, uint32(i))
		binary.BigEndian.PutUint64(msg[4:], uint64(time.Now().UnixNano()))
		if _, err := tx.Write(msg[:12+i%1000]); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			time.Sleep(time.Millisecond)
		}
	}
	delays := <-got
	if len(delays) != n {
		loss, err := p.Counts()
		t.Fatalf("%d of %d datagrams arrived; the path counted %+v (%v)", len(delays), n, loss, err)
	}
	slices.Sort(delays)
	if delays[0] < delay {
		t.Errorf("a datagram arrived %s after it was sent, want at least %s", delays[0], delay)
	}
	p99 := delays[n*99/100-1]
	// The receiver can read the last packet before the delay line has
	// recorded its lateness (299 of 300 was seen): wait until the path
	// holds nothing, which is once every packet is accounted.
	slowlabtest.WaitFor(t, "the delay lines to account every packet", func() bool { n, err := p.held(); return err == nil && n == 0 })
	lt := p.TakeLateness()
	t.Logf("one-way time min %s p50 %s p99 %s max %s; delay line lateness over %d packets: p50 %s p99 %s max %s, %d dropped",
		delays[0], delays[n/2], p99, delays[n-1], lt.Packets, lt.P50, lt.P99, lt.Max, lt.Dropped)
	if lt.Packets < n || lt.Dropped != 0 || lt.P50 < 0 || lt.P99 < lt.P50 || lt.Max < lt.P99 {
		t.Errorf("lateness %+v: want >= %d packets, none dropped, 0 <= p50 <= p99 <= max", lt, n)
	}
}

// TestPathConnectTime dials across each kind of path: with 25 ms each way
// (netem where the kernel has it, else the TUN delay line) the TCP
// handshake takes one 50 ms round trip (not two); without delay, a
// fraction of one.
func TestPathConnectTime(t *testing.T) {
	slowlabtest.Timing(t)
	requireRoot(t)
	for _, tc := range []struct {
		c        Config
		min, max time.Duration
	}{
		{Config{Delay: 25 * time.Millisecond, CongestionControl: "cubic"}, 50 * time.Millisecond, 75 * time.Millisecond},
		{Config{}, 0, 25 * time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.c.Delay), func(t *testing.T) { checkConnect(t, tc.c, tc.min, tc.max) })
	}
}

// checkConnect dials three times across a path made with c and wants
// every handshake to take at least lo, and the fastest at most hi. The
// upper bound only tells one round trip from two (or a delayed path from
// an undelayed one) on the fastest of three tries, so that a loaded
// machine's scheduling delay cannot fail it.
func checkConnect(t *testing.T, c Config, lo, hi time.Duration) {
	p := newPath(t, c)
	ln := acceptAll(t, p, func(net.Conn) {})
	fastest := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		conn, err := p.DialContext(context.Background(), "tcp", ln.Addr().String())
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if cc, err := congestionControl(conn); c.CongestionControl != "" && (err != nil || cc != c.CongestionControl) {
			t.Errorf("congestion control %q (%v), want %s", cc, err, c.CongestionControl)
		}
		conn.Close()
		t.Logf("%s path, delay %s: connect %s", p.Method, c.Delay, took)
		if took < lo {
			t.Errorf("%s path, delay %s: connect took %s, want at least %s", p.Method, c.Delay, took, lo)
		}
		fastest = min(fastest, took)
	}
	if fastest > hi {
		t.Errorf("%s path, delay %s: fastest of 3 connects took %s, want at most %s", p.Method, c.Delay, fastest, hi)
	}
	if _, err := p.DialContext(context.Background(), "tcp", "127.0.0.1:80"); err == nil {
		t.Error("dialed an address outside the path")
	}
}

// acceptAll listens on p's server end and hands each connection to
// seen, then closes it, until the test ends.
func acceptAll(t *testing.T, p *Path, seen func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := p.Listen(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			seen(conn)
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln
}

// congestionControl reads TCP_CONGESTION of c.
func congestionControl(c net.Conn) (string, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return "", err
	}
	var s string
	var serr error
	if err := rc.Control(func(fd uintptr) {
		s, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return s, serr
}

// TestNetem asks for netem explicitly: on a kernel without sch_netem the
// error says so and nothing is left; with it, the handshake takes 2 x delay.
func TestNetem(t *testing.T) {
	slowlabtest.Timing(t)
	requireRoot(t)
	p, err := New(context.Background(), Config{Method: MethodNetem, Delay: 10 * time.Millisecond})
	if errors.Is(err, ErrNoNetem) {
		t.Logf("as expected on this kernel: %v", err)
		netemtest.CheckNothingLeft(t)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := p.Listen(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	c, err := p.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("netem path: connect %s, want at least 20 ms", took)
	}
}

// TestPermissionError runs New in a copy of the test binary as an
// unprivileged user: the error must wrap ErrPermission and say what is
// needed.
func TestPermissionError(t *testing.T) {
	if os.Getenv("SLOWLAB_NETEM_UNPRIVILEGED") == "1" {
		_, err := New(context.Background(), Config{Delay: time.Millisecond})
		fmt.Println("error:", err)
		if !errors.Is(err, ErrPermission) {
			os.Exit(3)
		}
		os.Exit(0)
	}
	requireRoot(t)
	bin, dir := slowlabtest.PublicTestBinary(t, 0o755)
	cmd := exec.Command(bin, "-test.run=^TestPermissionError$")
	cmd.Env = append(os.Environ(), "SLOWLAB_NETEM_UNPRIVILEGED=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("unprivileged: %s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("unprivileged New did not fail with ErrPermission: %v", err)
	}
	if !strings.Contains(string(out), "CAP_NET_ADMIN") {
		t.Errorf("error does not say what is needed: %s", out)
	}
}

// udpPair returns a UDP socket in the server namespace and one in the
// client namespace connected to each other.
func udpPair(t *testing.T, p *Path) (srv, cli *net.UDPConn) {
	t.Helper()
	err := p.Server.Do(func() (err error) {
		srv, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ServerAddr, 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	err = p.Client.Do(func() (err error) {
		cli, err = net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	// Room for every datagram at both ends: a reader starved on a loaded
	// machine must drop none at its socket, which is not the path's doing
	// (SO_RCVBUFFORCE: past rmem_max, as root).
	for _, c := range []*net.UDPConn{srv, cli} {
		raw, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20) }); err != nil || serr != nil {
			t.Fatalf("SO_RCVBUFFORCE: %v %v", err, serr)
		}
	}
	return srv, cli
}

// oneWay sends n timestamped datagrams with send and returns the one-way
// time of each that recv got. With settle nil it reads until a gap of a
// second; else, once every datagram is sent, it calls settle (which
// returns when the path holds none: each has arrived or was dropped) and
// then reads what the socket still queues, so a reader starved on a
// loaded machine misses none that arrived.
func oneWay(t *testing.T, n int, send func([]byte) error, recv func([]byte) (int, error), setDeadline func(time.Time) error,
	settle func()) []time.Duration {
	t.Helper()
	got := make(chan []time.Duration, 1)
	settled := make(chan struct{})
	go func() {
		var d []time.Duration
		buf := make([]byte, 64)
		for {
			switch {
			case settle == nil:
				setDeadline(time.Now().Add(time.Second))
			case isClosed(settled):
				setDeadline(time.Now().Add(100 * time.Millisecond)) // a drain: what arrived is queued
			default:
				setDeadline(time.Now().Add(slowlabtest.HangGuard))
			}
			m, err := recv(buf)
			if err != nil && settle != nil && !isClosed(settled) && errors.Is(err, os.ErrDeadlineExceeded) {
				continue // settled meanwhile: the deadline interrupted the wait
			}
			if err != nil || m < 8 {
				break
			}
			d = append(d, time.Duration(time.Now().UnixNano()-int64(binary.BigEndian.Uint64(buf))))
		}
		got <- d
	}()
	msg := make([]byte, 8)
	for i := range n {
		binary.BigEndian.PutUint64(msg, uint64(time.Now().UnixNano()))
		if err := send(msg); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			time.Sleep(time.Millisecond)
		}
	}
	if settle != nil {
		settle()
		close(settled)
		// Wake a reader waiting on an empty queue; not now, so that a read
		// about to take a queued datagram still gets it.
		setDeadline(time.Now().Add(100 * time.Millisecond))
	}
	return <-got
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// settleOf is oneWay's settle for path p.
func settleOf(t *testing.T, p *Path) func() {
	return func() {
		if _, err := p.Settle(context.Background()); err != nil {
			t.Errorf("settle: %v", err)
		}
	}
}

// TestPathAsymmetricDelay gives each direction its own delay (5 ms up,
// 30 ms down) on both kinds of delaying path: a datagram from the client
// takes at least 5 ms and less than 30, one back at least 30 ms; the
// clocks of both ends are this process's.
func TestPathAsymmetricDelay(t *testing.T) {
	requireRoot(t)
	const up, down = 5 * time.Millisecond, 30 * time.Millisecond
	for _, m := range []Method{MethodNetem, MethodTUN} {
		t.Run(string(m), func(t *testing.T) {
			p, ok := newPathOr(t, Config{Method: m, DelayUp: up, DelayDown: down})
			if !ok {
				return
			}
			if p.RTT() != up+down {
				t.Errorf("RTT %s, want %s", p.RTT(), up+down)
			}
			srv, cli := udpPair(t, p)
			ups := oneWay(t, 50, func(b []byte) error { _, err := cli.Write(b); return err }, srv.Read, srv.SetReadDeadline, nil)
			peer := cli.LocalAddr().(*net.UDPAddr)
			downs := oneWay(t, 50, func(b []byte) error { _, err := srv.WriteToUDP(b, peer); return err }, cli.Read, cli.SetReadDeadline, nil)
			if len(ups) != 50 || len(downs) != 50 {
				t.Fatalf("%d of 50 datagrams up and %d of 50 down arrived", len(ups), len(downs))
			}
			slices.Sort(ups)
			slices.Sort(downs)
			t.Logf("%s: up min %s p50 %s, down min %s p50 %s", p.Method, ups[0], ups[25], downs[0], downs[25])
			if ups[0] < up || ups[25] >= down {
				t.Errorf("up: min %s, median %s: want at least %s and well under %s", ups[0], ups[25], up, down)
			}
			if downs[0] < down {
				t.Errorf("down: min %s, want at least %s", downs[0], down)
			}
		})
	}
}

// TestPathLoss drops 10% of the packets at random on both kinds of
// delaying path: of 2000 datagrams sent one way, the path counts every one
// in Counts, the ones it reports lost are exactly the ones that did not
// arrive, and they are 10% within 3 points (the binomial's standard
// deviation is 0.67 points).
func TestPathLoss(t *testing.T) {
	requireRoot(t)
	const n, loss = 2000, 10.0
	for _, m := range []Method{MethodNetem, MethodTUN} {
		t.Run(string(m), func(t *testing.T) {
			p, ok := newPathOr(t, Config{Method: m, Delay: time.Millisecond, Loss: loss})
			if !ok {
				return
			}
			srv, cli := udpPair(t, p)
			before, err := p.Counts()
			if err != nil {
				t.Fatal(err)
			}
			got := oneWay(t, n, func(b []byte) error { _, err := cli.Write(b); return err }, srv.Read, srv.SetReadDeadline, settleOf(t, p))
			after, err := p.Counts()
			if err != nil {
				t.Fatal(err)
			}
			c := after.Sub(before)
			t.Logf("%s: %d of %d arrived; path counted %d packets, %d lost (%.2f%%)", p.Method, len(got), n, c.Packets, c.Lost, c.Pct())
			if c.Packets != n || int(c.Lost) != n-len(got) {
				t.Errorf("counted %d packets and %d lost, want %d and the %d that did not arrive", c.Packets, c.Lost, n, n-len(got))
			}
			if math.Abs(c.Pct()-loss) > 3 {
				t.Errorf("lost %.2f%%, want %g%% within 3 points", c.Pct(), loss)
			}
		})
	}
}

// newPathOr creates a path with the method c names. A kernel built
// without sch_netem (this project's test machines) cannot have a netem
// path, and no package installs one: the test is skipped, saying so, after
// checking the failed attempt left nothing behind; ok is then false.
func newPathOr(t *testing.T, c Config) (*Path, bool) {
	t.Helper()
	procs := runtime.GOMAXPROCS(0)
	p, err := New(context.Background(), c)
	if errors.Is(err, ErrNoNetem) {
		netemtest.CheckNothingLeft(t)
		t.Skipf("this kernel cannot run a netem path (the tun path is tested instead): %v", err)
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		netemtest.CheckNothingLeft(t)
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Errorf("GOMAXPROCS %d after Close, was %d", got, procs)
		}
	})
	return p, true
}

// TestPathIPv6 gives a path IPv6 on each kind of link: the listener
// answers at both of the server's addresses on one port, a connection
// over IPv6 comes from the client's IPv6 address and its handshake takes
// at least the path's round trip, and a SYN to SilentAddr6 crosses the
// path (the ends count it sent and received) and is never answered.
func TestPathIPv6(t *testing.T) {
	requireRoot(t)
	for _, c := range []Config{{Method: MethodNone, IPv6: true}, {Method: MethodTUN, Delay: 10 * time.Millisecond, IPv6: true}} {
		t.Run(string(c.Method), func(t *testing.T) {
			p := newPath(t, c)
			if !p.ClientAddr6.Is6() || !p.ServerAddr6.Is6() || !p.SilentAddr6.Is6() || !p.Across(p.SilentAddr6) || p.Across(p.ClientAddr6) {
				t.Fatalf("addresses %s %s %s: want three IPv6 ones, the server's and the silent one across", p.ClientAddr6, p.ServerAddr6, p.SilentAddr6)
			}
			peers := make(chan netip.Addr, 2)
			ln := acceptAll(t, p, func(c net.Conn) { peers <- c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap() })
			port := uint16(ln.Addr().(*net.TCPAddr).Port)
			for _, want := range []struct{ to, from netip.Addr }{{p.ServerAddr6, p.ClientAddr6}, {p.ServerAddr, p.ClientAddr}} {
				start := time.Now()
				conn, err := p.DialContext(context.Background(), "tcp", netip.AddrPortFrom(want.to, port).String())
				took := time.Since(start)
				if err != nil {
					t.Fatalf("dial %s: %v", want.to, err)
				}
				conn.Close()
				if from := <-peers; from != want.from {
					t.Errorf("connection to %s came from %s, want %s", want.to, from, want.from)
				}
				if took < p.RTT() {
					t.Errorf("connect to %s took %s, under the path's round trip %s", want.to, took, p.RTT())
				}
			}
			before, err := p.Settle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			conn, err := p.DialContext(ctx, "tcp", netip.AddrPortFrom(p.SilentAddr6, port).String())
			cancel()
			if err == nil {
				conn.Close()
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("dial the silent address: %v, want no answer until the deadline", err)
			}
			after, err := p.Settle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tr := after.Sub(before); tr.Sent < 1 || tr.Lost() != 0 {
				t.Errorf("the SYN to the silent address: ends counted %d sent, %d received; want it across the path", tr.Sent, tr.Received)
			}
			if _, err := p.DialContext(context.Background(), "tcp6", "[::1]:80"); err == nil {
				t.Error("dialed an address outside the path")
			}
		})
	}
}
