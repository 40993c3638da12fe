package latencygap

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http/httptrace"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// lookupKey is the context key of a request's *lookup.
type lookupKey struct{}

// lookup is what a request's dial spent resolving the server's name,
// and the connection it then made.
type lookup struct {
	done bool          // the request dialed, and so resolved the name
	took time.Duration // 0 when the client's cache answered
	// family is what the connection went over (FamilyIPv4, FamilyIPv6;
	// "" when none was made), and connect what it took from the first
	// attempt (a fallback's wait included).
	family  string
	connect time.Duration
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
	dial     dialFunc
	resolver net.Resolver
	fallback time.Duration // FallbackDelay; shorter in tests

	mu       sync.Mutex // guards names and ttl
	names    map[string]*nameEntry
	ttl      time.Duration // the least TTL of the A and AAAA records of the last lookup's answers; -1: none
	lookupMu sync.Mutex    // one lookup at a time: ttl is the current one's

	joined func(name string) // when set, called as a dial starts waiting for another's lookup of name
}

// nameEntry is one name's cached answer, or its lookup under way.
type nameEntry struct {
	addrs   []netip.Addr // the cached answer, until expires
	expires time.Time
	wait    chan struct{} // a lookup under way: closed when it ends
	err     error         // that lookup's
}

// newNameDialer resolves through the resolver at resolverAddr, reached
// with dial (the path's), and connects with dial too.
func newNameDialer(dial dialFunc, resolverAddr string) *nameDialer {
	d := &nameDialer{dial: dial, names: map[string]*nameEntry{}, fallback: FallbackDelay}
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
// port, noting in ctx's lookup what resolving it took and the connection
// it made. It connects as dialFamilies does, and calls ctx's httptrace
// ConnectStart as the first attempt starts and ConnectDone as one
// connects: the connect a client waits, a fallback included.
func (d *nameDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil || !labName(host) {
		return nil, fmt.Errorf("dial %s: only %s (and the other origins' names) through the lab's resolver", address, ServerName)
	}
	addrs, took, err := d.resolve(ctx, strings.ToLower(host))
	l, _ := ctx.Value(lookupKey{}).(*lookup)
	if l != nil {
		l.done, l.took = true, took
	}
	if err != nil {
		return nil, err
	}
	trace := httptrace.ContextClientTrace(ctx)
	first := net.JoinHostPort(addrs[0].String(), port)
	if trace != nil && trace.ConnectStart != nil {
		trace.ConnectStart(network, first)
	}
	start := time.Now()
	// untraced: its attempts' hooks are not the connect's, which is timed here.
	c, at, connected, err := dialFamilies(untraced{ctx}, d.dial, network, addrs, port, d.fallback)
	if trace != nil && trace.ConnectDone != nil {
		if err == nil {
			first = net.JoinHostPort(at.String(), port)
		}
		trace.ConnectDone(network, first, err)
	}
	if l != nil && err == nil {
		l.family, l.connect = FamilyIPv6, connected.Sub(start)
		if at.Is4() {
			l.family = FamilyIPv4
		}
	}
	return c, err
}

// dialFamilies connects to the first of addrs (ordered as the client
// prefers them) that answers, as Go's net.Dialer does with a name's
// addresses of both families (RFC 6555 happy eyeballs, its dialParallel):
// the addresses of the first one's family one after the other, and after
// fallback, or as soon as those all failed, the other family's beside
// them; the first to connect wins and the other attempt is cancelled (its
// connection, should it still come, closed). It returns the connection,
// its address, and when it connected (before the loser was waited for).
func dialFamilies(ctx context.Context, dial dialFunc, network string, addrs []netip.Addr, port string, fallback time.Duration) (net.Conn, netip.Addr, time.Time, error) {
	var primaries, fallbacks []netip.Addr
	for _, a := range addrs {
		if a.Is4() == addrs[0].Is4() {
			primaries = append(primaries, a)
		} else {
			fallbacks = append(fallbacks, a)
		}
	}
	if len(fallbacks) == 0 {
		c, at, err := dialSerial(ctx, dial, network, primaries, port)
		return c, at, time.Now(), err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		c       net.Conn
		at      netip.Addr
		err     error
		primary bool
	}
	results := make(chan result, 2)
	race := func(addrs []netip.Addr, primary bool) {
		go func() {
			c, at, err := dialSerial(ctx, dial, network, addrs, port)
			results <- result{c, at, err, primary}
		}()
	}
	race(primaries, true)
	timer := time.NewTimer(fallback)
	defer timer.Stop()
	var primaryErr, fallbackErr error
	for running, fellBack := 1, false; running > 0; {
		select {
		case <-timer.C:
		case r := <-results:
			running--
			if r.err == nil {
				connected := time.Now()
				cancel()
				for range running { // the loser, cancelled: closed should it have connected
					if l := <-results; l.c != nil {
						l.c.Close()
					}
				}
				return r.c, r.at, connected, nil
			}
			if r.primary {
				primaryErr = r.err
			} else {
				fallbackErr = r.err
			}
		}
		if !fellBack { // fallback passed, or the primaries all failed
			fellBack, running = true, running+1
			race(fallbacks, false)
		}
	}
	return nil, netip.Addr{}, time.Time{}, cmp.Or(primaryErr, fallbackErr)
}

// dialSerial connects to each of addrs in turn until one answers.
func dialSerial(ctx context.Context, dial dialFunc, network string, addrs []netip.Addr, port string) (net.Conn, netip.Addr, error) {
	var first error
	for _, a := range addrs {
		c, err := dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, a, nil
		}
		first = cmp.Or(first, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.Addr{}, first
}

// resolve returns name's addresses, from the cache while its TTL lasts
// (took 0), else looked up, or from the lookup another dial has under
// way: took is from before the queries were sent (or this dial began
// waiting) to after the answers were read.
func (d *nameDialer) resolve(ctx context.Context, name string) ([]netip.Addr, time.Duration, error) {
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
			return nil, time.Since(start), fmt.Errorf("resolve %s: %w", name, ctx.Err())
		}
		return e.addrs, time.Since(start), e.err // no addresses with an error
	case e != nil && len(e.addrs) > 0 && start.Before(e.expires):
		d.mu.Unlock()
		return e.addrs, 0, nil
	}
	e = &nameEntry{wait: make(chan struct{})}
	d.names[name] = e
	d.mu.Unlock()
	addrs, ttl, err := d.lookup(ctx, name)
	took := time.Since(start)
	d.mu.Lock()
	e.addrs, e.err = addrs, err
	if err != nil || ttl <= 0 {
		delete(d.names, name) // nothing kept: the next dial looks up
	} else {
		e.expires = start.Add(ttl)
	}
	close(e.wait)
	e.wait = nil
	d.mu.Unlock()
	return addrs, took, err
}

// lookup asks the resolver for name's IPv4 and IPv6 addresses at once
// (net.Resolver sends the A and AAAA queries in parallel and waits for
// both), returning them as the client prefers them (preferred) with the
// least TTL of the answers' records (0 when none said one).
func (d *nameDialer) lookup(ctx context.Context, name string) ([]netip.Addr, time.Duration, error) {
	d.lookupMu.Lock()
	defer d.lookupMu.Unlock()
	d.mu.Lock()
	d.ttl = -1
	d.mu.Unlock()
	// Without the request's trace: its UDP dial is not the request's TCP connect.
	addrs, err := d.resolver.LookupNetIP(untraced{ctx}, "ip", dns.Fqdn(name))
	if err != nil {
		return nil, 0, fmt.Errorf("resolve %s: %w", name, err)
	}
	addrs = preferred(addrs)
	if len(addrs) == 0 {
		return nil, 0, fmt.Errorf("resolve %s: no address in the answers", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return addrs, max(d.ttl, 0), nil
}

// preferred orders addrs (unmapped) as the client connects to them: IPv6
// first. It is the order RFC 6724's default policy gives a global IPv6
// destination (precedence 40; the path's are in 2001:db8::/32) against
// an IPv4 one (35) from a host with addresses of both, which Go's
// resolver would sort by itself were its source addresses those of the
// client namespace and not of the process's own.
func preferred(addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.Unmap())
	}
	slices.SortStableFunc(out, func(a, b netip.Addr) int { return cmp.Compare(b.BitLen(), a.BitLen()) }) // 128 bits before 32
	return out
}

// msDuration is ms milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// untraced is a context that ends with ctx (its deadline, its
// cancellation) without its values, a request's httptrace among them.
type untraced struct{ context.Context }

func (untraced) Value(any) any { return nil }

// noteTTL keeps the least TTL of m's address records.
func (d *nameDialer) noteTTL(m *dns.Msg) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, rr := range m.Answer {
		h := rr.Header()
		if h.Rrtype != dns.TypeA && h.Rrtype != dns.TypeAAAA {
			continue
		}
		if t := time.Duration(h.Ttl) * time.Second; d.ttl < 0 || t < d.ttl {
			d.ttl = t
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
