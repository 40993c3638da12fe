package latencygap

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/slowlab/slowlab/lab/netem"
)

// DNS modes of a condition (Settings.DNS): how the client finds the
// server's address.
const (
	DNSNone = "none" // the URL names the server by its IP: no lookup
	// DNSCold: the resolver answers with TTL 0, so every new connection
	// looks the name up across the path.
	DNSCold = "cold"
	// DNSCached: the resolver answers with CachedTTL and the client keeps
	// the answer that long: only a client's first connection (the warm-up
	// request's) looks the name up.
	DNSCached = "cached"
)

// DNSModes lists the DNS modes.
var DNSModes = []string{DNSNone, DNSCold, DNSCached}

// ServerName is the name the lab's resolver answers for the server.
const ServerName = "server.slowlab.test"

// maxOrigins is how many origins a load condition may have: the hops of
// the longest cross-origin chain and its resource.
const maxOrigins = MaxRedirects + 1

// originName is the name of origin k (0: the server's, ServerName; 1:
// origin2.slowlab.test, and so on), each served by the lab's resolver at
// the server's address: a cross-origin request needs its own lookup and
// connection.
func originName(k int) string {
	if k == 0 {
		return ServerName
	}
	return fmt.Sprintf("origin%d.slowlab.test", k+1)
}

// labName reports whether name (without its final dot) is one the lab's
// resolver answers.
func labName(name string) bool {
	for k := range maxOrigins {
		if strings.EqualFold(name, originName(k)) {
			return true
		}
	}
	return false
}

// CachedTTL is the TTL of the resolver's answers in the cached mode.
const CachedTTL = 300 * time.Second

// MaxDNSDelay bounds the resolver's extra delay before it answers.
const MaxDNSDelay = 5 * time.Second

// dnsModes is the grid's DNS modes, none when not given.
func (c *Config) dnsModes() []string {
	if len(c.DNS) == 0 {
		return []string{DNSNone}
	}
	return c.DNS
}

// validateDNS checks the DNS modes and the resolver's delay.
func (c *Config) validateDNS() error {
	for i, m := range c.DNS {
		if !slices.Contains(DNSModes, m) {
			return fmt.Errorf("dns[%d] %q: allowed %s", i, m, strings.Join(DNSModes, ", "))
		}
		if slices.Index(c.DNS, m) != i {
			return fmt.Errorf("dns[%d] %q: given twice", i, m)
		}
	}
	d := time.Duration(c.DNSDelay)
	switch {
	case d < 0 || d > MaxDNSDelay:
		return fmt.Errorf("dns_delay %s: allowed 0 to %s", d, MaxDNSDelay)
	case d > 0 && !c.looksUp():
		return fmt.Errorf("dns_delay %s without a dns condition that looks up: give dns cold or cached (--dns cold,cached)", d)
	}
	return nil
}

// looksUp reports whether some condition resolves the server's name.
func (c *Config) looksUp() bool {
	for _, m := range c.DNS {
		if m != DNSNone {
			return true
		}
	}
	return false
}

// resolver is the lab's DNS server, in the server namespace at the
// path's server address: a lookup crosses the path both ways.
type resolver struct {
	addr string // ip:port, UDP
	srv  *dns.Server
	stop chan struct{} // closed to cut short a delayed answer
	done chan struct{} // closed when the server has returned
}

// startResolver serves ServerName and the other origins' names on path: an A record of the server's
// address (and an AAAA one where it has IPv6; else an empty answer) with
// ttl, each answer after delay. Other names are NXDOMAIN.
func startResolver(ctx context.Context, path *netem.Path, ttl, delay time.Duration) (*resolver, error) {
	pc, err := path.ListenPacket(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("resolver in the server namespace: %w", err)
	}
	r := &resolver{addr: pc.LocalAddr().String(), stop: make(chan struct{}), done: make(chan struct{})}
	started := make(chan struct{})
	r.srv = &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-r.stop:
					t.Stop()
					return
				}
			}
			_ = w.WriteMsg(answer(q, path.ServerAddr, ttl))
		})}
	var serr error
	go func() {
		defer close(r.done)
		serr = r.srv.ActivateAndServe()
	}()
	select {
	case <-started:
		return r, nil
	case <-r.done:
		pc.Close()
		return nil, fmt.Errorf("resolver in the server namespace: %w", serr)
	}
}

// answer is the resolver's reply to q.
func answer(q *dns.Msg, server netip.Addr, ttl time.Duration) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if len(q.Question) != 1 || !labName(strings.TrimSuffix(q.Question[0].Name, ".")) {
		m.Rcode = dns.RcodeNameError
		return m
	}
	qn := q.Question[0]
	hdr := dns.RR_Header{Name: qn.Name, Class: dns.ClassINET, Ttl: uint32(ttl / time.Second)}
	switch {
	case qn.Qtype == dns.TypeA && server.Is4():
		hdr.Rrtype = dns.TypeA
		m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: server.AsSlice()})
	case qn.Qtype == dns.TypeAAAA && server.Is6():
		hdr.Rrtype = dns.TypeAAAA
		m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: server.AsSlice()})
	}
	return m
}

// close stops the resolver and waits for it.
func (r *resolver) close() {
	close(r.stop)
	_ = r.srv.Shutdown()
	<-r.done
}

// lookupKey is the context key of a request's *lookup.
type lookupKey struct{}

// lookup is what a request's dial spent resolving the server's name.
type lookup struct {
	done bool          // the request dialed, and so resolved the name
	took time.Duration // 0 when the client's cache answered
}

// withLookup returns ctx carrying l, which the client's dial fills in.
func withLookup(ctx context.Context, l *lookup) context.Context {
	return context.WithValue(ctx, lookupKey{}, l)
}

// nameDialer dials a lab name (ServerName or another origin's,
// originName) and port through the lab's resolver: a net.Resolver whose
// queries go over the path to the resolver, its answers kept for their
// TTL (none with TTL 0). Dials of one name while its lookup is under way
// wait for that lookup, as a browser's do, rather than send their own.
type nameDialer struct {
	dial     func(ctx context.Context, network, address string) (net.Conn, error)
	resolver net.Resolver

	mu       sync.Mutex // guards names
	names    map[string]*nameEntry
	lookupMu sync.Mutex // one lookup at a time: ttl is the current one's

	ttlMu  sync.Mutex
	ttl    time.Duration // the least TTL of the A and AAAA records of the last lookup's answers
	gotTTL bool

	joined func(name string) // when set, called as a dial starts waiting for another's lookup of name
}

// nameEntry is one name's cached answer, or its lookup under way.
type nameEntry struct {
	addr    netip.Addr // the cached answer, until expires
	expires time.Time
	wait    chan struct{} // a lookup under way: closed when it ends
	err     error         // that lookup's
}

// newNameDialer resolves through the resolver at resolverAddr, reached
// with dial (the path's), and connects with dial too.
func newNameDialer(dial func(ctx context.Context, network, address string) (net.Conn, error), resolverAddr string) *nameDialer {
	d := &nameDialer{dial: dial, names: map[string]*nameEntry{}}
	d.resolver = net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		c, err := dial(ctx, network, resolverAddr)
		if u, ok := c.(*net.UDPConn); ok {
			return &ttlConn{UDPConn: u, d: d}, nil // a PacketConn still: the resolver frames it as UDP
		}
		return c, err
	}}
	return d
}

// DialContext implements http.Transport.DialContext for a lab name and
// port, noting in ctx's lookup what resolving it took.
func (d *nameDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil || !labName(host) {
		return nil, fmt.Errorf("dial %s: only %s (and the other origins' names) through the lab's resolver", address, ServerName)
	}
	addr, took, err := d.resolve(ctx, strings.ToLower(host))
	if l, ok := ctx.Value(lookupKey{}).(*lookup); ok {
		l.done, l.took = true, took
	}
	if err != nil {
		return nil, err
	}
	return d.dial(ctx, network, net.JoinHostPort(addr.String(), port))
}

// resolve returns name's address, from the cache while its TTL lasts
// (took 0), else looked up, or from the lookup another dial has under
// way: took is from before the queries were sent (or this dial began
// waiting) to after the answer was read.
func (d *nameDialer) resolve(ctx context.Context, name string) (netip.Addr, time.Duration, error) {
	start := time.Now()
	d.mu.Lock()
	e := d.names[name]
	switch {
	case e != nil && e.wait != nil:
		wait := e.wait
		d.mu.Unlock()
		if d.joined != nil {
			d.joined(name)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return netip.Addr{}, time.Since(start), fmt.Errorf("resolve %s: %w", name, ctx.Err())
		}
		if e.err != nil {
			return netip.Addr{}, time.Since(start), e.err
		}
		return e.addr, time.Since(start), nil
	case e != nil && e.addr.IsValid() && start.Before(e.expires):
		d.mu.Unlock()
		return e.addr, 0, nil
	}
	e = &nameEntry{wait: make(chan struct{})}
	d.names[name] = e
	d.mu.Unlock()
	addr, ttl, err := d.lookup(ctx, name)
	took := time.Since(start)
	d.mu.Lock()
	e.addr, e.err = addr, err
	if err != nil || ttl <= 0 {
		delete(d.names, name) // nothing kept: the next dial looks up
	} else {
		e.expires = start.Add(ttl)
	}
	close(e.wait)
	e.wait = nil
	d.mu.Unlock()
	return addr, took, err
}

// lookup asks the resolver for name's IPv4 address, returning it with
// the least TTL of the answer's records (0 when none said one).
func (d *nameDialer) lookup(ctx context.Context, name string) (netip.Addr, time.Duration, error) {
	d.lookupMu.Lock()
	defer d.lookupMu.Unlock()
	// The lookup's own context, without the request's trace: its UDP
	// dial is not the request's TCP connect.
	lctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	if dl, ok := ctx.Deadline(); ok {
		var c2 context.CancelFunc
		lctx, c2 = context.WithDeadline(lctx, dl)
		defer c2()
	}
	d.ttlMu.Lock()
	d.ttl, d.gotTTL = 0, false
	d.ttlMu.Unlock()
	addrs, err := d.resolver.LookupNetIP(lctx, "ip", dns.Fqdn(name))
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("resolve %s: %w", name, err)
	}
	var addr netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			addr = a
			break
		}
	}
	if !addr.IsValid() {
		return netip.Addr{}, 0, fmt.Errorf("resolve %s: no IPv4 address in %v", name, addrs)
	}
	d.ttlMu.Lock()
	ttl, got := d.ttl, d.gotTTL
	d.ttlMu.Unlock()
	if !got {
		ttl = 0
	}
	return addr, ttl, nil
}

// noteTTL keeps the least TTL of m's address records.
func (d *nameDialer) noteTTL(m *dns.Msg) {
	d.ttlMu.Lock()
	defer d.ttlMu.Unlock()
	for _, rr := range m.Answer {
		h := rr.Header()
		if h.Rrtype != dns.TypeA && h.Rrtype != dns.TypeAAAA {
			continue
		}
		if t := time.Duration(h.Ttl) * time.Second; !d.gotTTL || t < d.ttl {
			d.ttl, d.gotTTL = t, true
		}
	}
}

// ttlConn is a resolver's UDP connection that reads the TTL of each
// answer it carries: net.Resolver does not say it.
type ttlConn struct {
	*net.UDPConn
	d *nameDialer
}

func (c *ttlConn) Read(b []byte) (int, error) {
	n, err := c.UDPConn.Read(b)
	if n > 0 {
		var m dns.Msg
		if m.Unpack(b[:n]) == nil {
			c.d.noteTTL(&m)
		}
	}
	return n, err
}
