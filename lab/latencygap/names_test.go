package latencygap

import (
	"context"
	"net"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// labResolver is the lab's answer() on a loopback UDP socket, counting
// the A queries per name and holding each answer until release has a
// value for it (nil release: answer at once).
type labResolver struct {
	addr    string
	mu      sync.Mutex
	queries map[string]int
	asked   chan string // each A query's name, as it arrives
	release chan struct{}
	v6      netip.Addr // the AAAA answer (none when not valid)
}

func startLabResolver(t *testing.T, ttl time.Duration, hold bool) *labResolver {
	t.Helper()
	return startLabResolver6(t, ttl, hold, netip.Addr{})
}

// startLabResolver6 is startLabResolver answering AAAA with v6.
func startLabResolver6(t *testing.T, ttl time.Duration, hold bool, v6 netip.Addr) *labResolver {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &labResolver{addr: pc.LocalAddr().String(), queries: map[string]int{}, asked: make(chan string, 64)}
	if hold {
		r.release = make(chan struct{}, 64)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		if len(q.Question) == 1 && q.Question[0].Qtype == dns.TypeA {
			name := strings.TrimSuffix(strings.ToLower(q.Question[0].Name), ".")
			r.mu.Lock()
			r.queries[name]++
			r.mu.Unlock()
			r.asked <- name
			if r.release != nil {
				<-r.release
			}
		}
		_ = w.WriteMsg(answer(q, netip.MustParseAddr("127.0.0.1"), v6, ttl))
	})}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return r
}

func (r *labResolver) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queries[name]
}

func loopbackDial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// TestNameDialerShares: a dial of a name whose lookup is under way waits
// for it rather than asking again, and gets its answer, having waited
// for it (took > 0); another origin's name is looked up on its own.
func TestNameDialerShares(t *testing.T) {
	r := startLabResolver(t, 0, true)
	d := newNameDialer(loopbackDial, r.addr)
	joined := make(chan string, 4)
	d.joined = func(name string) { joined <- name }
	ctx := context.Background()
	name := originName(1)
	type result struct {
		addrs []netip.Addr
		took  time.Duration
		err   error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() { a, took, err := d.resolve(ctx, name); first <- result{a, took, err} }()
	if got := <-r.asked; got != name {
		t.Fatalf("asked %s, want %s", got, name)
	}
	go func() { a, took, err := d.resolve(ctx, name); second <- result{a, took, err} }()
	select { // the second dial either joins the lookup or asks again
	case got := <-joined:
		if got != name {
			t.Fatalf("joined %s", got)
		}
	case got := <-r.asked:
		r.release <- struct{}{}
		r.release <- struct{}{}
		t.Fatalf("a second dial of %s during its lookup asked for %s again", name, got)
	}
	r.release <- struct{}{}
	for _, c := range []chan result{first, second} {
		res := <-c
		if res.err != nil || len(res.addrs) != 1 || res.addrs[0] != netip.MustParseAddr("127.0.0.1") || res.took <= 0 {
			t.Errorf("resolve %s: %v in %s, %v", name, res.addrs, res.took, res.err)
		}
	}
	if n := r.count(name); n != 1 {
		t.Errorf("%s: %d A queries for two dials at once, want 1", name, n)
	}
	// TTL 0: nothing kept, the next dial asks again; another name asks
	// for itself.
	for _, n := range []string{name, originName(0)} {
		r.release <- struct{}{}
		if _, _, err := d.resolve(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := r.count(name), r.count(originName(0)); a != 2 || b != 1 {
		t.Errorf("after TTL 0: %d queries for %s (want 2), %d for %s (want 1)", a, name, b, originName(0))
	}
}

// TestNameDialerCaches: an answer with a TTL is kept per name, so a name
// is asked for once (the next dials took 0), while each other name is
// asked for its own; a name the lab does not serve is refused before any
// query.
func TestNameDialerCaches(t *testing.T) {
	r := startLabResolver(t, CachedTTL, false)
	d := newNameDialer(loopbackDial, r.addr)
	ctx := context.Background()
	for range 3 {
		for k := range 2 {
			if _, _, err := d.resolve(ctx, originName(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := range 2 {
		if n := r.count(originName(k)); n != 1 {
			t.Errorf("%s: %d queries over 3 dials with TTL %s, want 1", originName(k), n, CachedTTL)
		}
		if _, took, err := d.resolve(ctx, originName(k)); err != nil || took != 0 {
			t.Errorf("%s cached: took %s, %v", originName(k), took, err)
		}
	}
	if _, err := d.DialContext(ctx, "tcp", "elsewhere.test:80"); err == nil || !strings.Contains(err.Error(), "only server.slowlab.test") {
		t.Errorf("a name the lab does not serve: %v", err)
	}
	if !labName("ORIGIN3.slowlab.test") || labName(originName(maxOrigins)) {
		t.Errorf("labName: origin3 %t, origin%d %t", labName("ORIGIN3.slowlab.test"), maxOrigins+1, labName(originName(maxOrigins)))
	}
}

// TestNameDialerFamilies dials a lab name whose resolver answers A with
// 127.0.0.1 and AAAA with ::1 (or nothing), listeners on both: with both
// answers the dial asks both and connects over IPv6, as a client prefers
// it; with A alone, over IPv4. The request's lookup says the family and
// the connect, and the request's trace sees one connect start and one
// done, to the address it connected to.
func TestNameDialerFamilies(t *testing.T) {
	for _, tc := range []struct {
		v6     netip.Addr
		family string
		peer   string
	}{{netip.MustParseAddr("::1"), FamilyIPv6, "::1"}, {netip.Addr{}, FamilyIPv4, "127.0.0.1"}} {
		r := startLabResolver6(t, 0, false, tc.v6)
		ln4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln4.Close()
		port := ln4.Addr().(*net.TCPAddr).Port
		ln6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
		if err != nil {
			t.Skipf("no IPv6 loopback here: %v", err)
		}
		defer ln6.Close()
		d := newNameDialer(loopbackDial, r.addr)
		var l lookup
		var starts, dones []string
		trace := &httptrace.ClientTrace{
			ConnectStart: func(_, addr string) { starts = append(starts, addr) },
			ConnectDone:  func(_, addr string, _ error) { dones = append(dones, addr) },
		}
		ctx := httptrace.WithClientTrace(withLookup(context.Background(), &l), trace)
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ServerName, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := net.JoinHostPort(tc.peer, strconv.Itoa(port))
		if got := c.RemoteAddr().String(); got != want || !l.done || l.family != tc.family || l.connect <= 0 {
			t.Errorf("AAAA %v: connected to %s, lookup %+v; want %s over %s", tc.v6, got, l, want, tc.family)
		}
		if len(starts) != 1 || len(dones) != 1 || dones[0] != want {
			t.Errorf("AAAA %v: trace saw connects start %v and done %v; want one each, done to %s", tc.v6, starts, dones, want)
		}
	}
}
