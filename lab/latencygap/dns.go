package latencygap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
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

// Family modes of a DNS condition (Settings.DNSFamilies): what the lab's
// resolver answers for AAAA. The client asks A and AAAA at once, as Go's
// resolver does for a "tcp" dial, and connects as Go's net.Dialer does
// (dialFamilies).
const (
	// FamiliesA answers AAAA empty: the client connects over IPv4 (the
	// baseline).
	FamiliesA = "a"
	// FamiliesBoth answers AAAA with the server's IPv6 address across the
	// same path: the client prefers it and connects over IPv6.
	FamiliesBoth = "a+aaaa"
	// FamiliesBlackhole answers AAAA with an address across the path that
	// never answers a SYN (netem.Path.SilentAddr6): the client waits
	// FallbackDelay before it races IPv4, the happy-eyeballs cost.
	FamiliesBlackhole = "aaaa-blackhole"
	// FamiliesLate answers AAAA with the server's IPv6 address, Config.
	// DNSAAAADelay after the A answer: the client waits for both answers
	// before it connects, as Go's resolver does (no RFC 8305 resolution
	// delay).
	FamiliesLate = "aaaa-late"
)

// DNSFamilyModes lists the family modes.
var DNSFamilyModes = []string{FamiliesA, FamiliesBoth, FamiliesBlackhole, FamiliesLate}

// FallbackDelay is how long a connect to the preferred family runs alone
// before the other family's races it: Go's net.Dialer default (its
// FallbackDelay 0), within RFC 6555's 150 to 250 ms and above RFC 8305's
// 250 ms "Connection Attempt Delay".
const FallbackDelay = 300 * time.Millisecond

// The families a connection went over (Request.Family).
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
)

// familyOf names a's family.
func familyOf(a netip.Addr) string {
	if a.Is4() {
		return FamilyIPv4
	}
	return FamilyIPv6
}

// dnsCond is a DNS condition of the grid: a DNS mode and, when it looks
// up, a family mode ("" for none).
type dnsCond struct{ mode, families string }

// dnsConds is the grid's DNS conditions: each DNS mode, and each one that
// looks up with each family mode (FamiliesA when none is given).
func (c *Config) dnsConds() []dnsCond {
	fams := c.DNSFamilies
	if len(fams) == 0 {
		fams = []string{FamiliesA}
	}
	var out []dnsCond
	for _, m := range c.dnsModes() {
		if m == DNSNone {
			out = append(out, dnsCond{mode: m})
			continue
		}
		for _, f := range fams {
			out = append(out, dnsCond{mode: m, families: f})
		}
	}
	return out
}

// ipv6 reports whether some condition's resolver answers AAAA, so that
// the path needs IPv6.
func (c *Config) ipv6() bool {
	for _, d := range c.dnsConds() {
		if d.families != "" && d.families != FamiliesA {
			return true
		}
	}
	return false
}

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
	for i, f := range c.DNSFamilies {
		if !slices.Contains(DNSFamilyModes, f) {
			return fmt.Errorf("dns_families[%d] %q: allowed %s", i, f, strings.Join(DNSFamilyModes, ", "))
		}
		if slices.Index(c.DNSFamilies, f) != i {
			return fmt.Errorf("dns_families[%d] %q: given twice", i, f)
		}
	}
	if len(c.DNSFamilies) > 0 && !c.looksUp() {
		return fmt.Errorf("dns_families %s without a dns condition that looks up: give dns cold or cached (--dns cold,cached)", strings.Join(c.DNSFamilies, ","))
	}
	d := time.Duration(c.DNSDelay)
	switch {
	case d < 0 || d > MaxDNSDelay:
		return fmt.Errorf("dns_delay %s: allowed 0 to %s", d, MaxDNSDelay)
	case d > 0 && !c.looksUp():
		return fmt.Errorf("dns_delay %s without a dns condition that looks up: give dns cold or cached (--dns cold,cached)", d)
	}
	late := slices.Contains(c.DNSFamilies, FamiliesLate)
	switch a := time.Duration(c.DNSAAAADelay); {
	case a < 0 || time.Duration(c.DNSDelay)+a > MaxDNSDelay:
		return fmt.Errorf("dns_aaaa_delay %s: allowed 0 to %s with dns_delay", a, MaxDNSDelay-d)
	case late && a == 0:
		return errors.New("dns_families aaaa-late without dns_aaaa_delay: give how much later AAAA is answered (--dns-aaaa-delay 100ms)")
	case !late && a > 0:
		return fmt.Errorf("dns_aaaa_delay %s without dns_families aaaa-late: give it (--dns-families a,aaaa-late)", a)
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

// startResolver serves ServerName and the other origins' names on path,
// as a condition's settings s say: an A record of the server's address
// and, by its family mode, an AAAA one (the server's IPv6 address, or
// the path's silent one) or an empty answer, with TTL 0 (cold) or
// CachedTTL (cached), each answer after its DNS delay (AAAA with
// aaaa-late after its AAAA delay more). Other names are NXDOMAIN.
func startResolver(ctx context.Context, path *netem.Path, s Settings) (*resolver, error) {
	ttl, delay, late := time.Duration(0), msDuration(s.DNSDelayMS), time.Duration(0)
	if s.DNS == DNSCached {
		ttl = CachedTTL
	}
	families := s.DNSFamilies
	var v6 netip.Addr
	switch families {
	case FamiliesBoth:
		v6 = path.ServerAddr6
	case FamiliesBlackhole:
		v6 = path.SilentAddr6
	case FamiliesLate:
		v6, late = path.ServerAddr6, msDuration(s.DNSAAAADelayMS)
	}
	if families != "" && families != FamiliesA && !v6.IsValid() {
		return nil, fmt.Errorf("resolver: dns families %s needs a path with IPv6", families)
	}
	pc, err := path.ListenPacket(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("resolver in the server namespace: %w", err)
	}
	r := &resolver{addr: pc.LocalAddr().String(), stop: make(chan struct{}), done: make(chan struct{})}
	started := make(chan struct{})
	r.srv = &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
			delay := delay
			if len(q.Question) == 1 && q.Question[0].Qtype == dns.TypeAAAA {
				delay += late
			}
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-r.stop:
					t.Stop()
					return
				}
			}
			_ = w.WriteMsg(answer(q, path.ServerAddr, v6, ttl))
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

// answer is the resolver's reply to q: v4 for A, v6 for AAAA (none when
// it is not valid: an empty answer).
func answer(q *dns.Msg, v4, v6 netip.Addr, ttl time.Duration) *dns.Msg {
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
	case qn.Qtype == dns.TypeA && v4.Is4():
		hdr.Rrtype = dns.TypeA
		m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: v4.AsSlice()})
	case qn.Qtype == dns.TypeAAAA && v6.Is6():
		hdr.Rrtype = dns.TypeAAAA
		m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: v6.AsSlice()})
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
	dial     func(ctx context.Context, network, address string) (net.Conn, error)
	resolver net.Resolver
	fallback time.Duration // FallbackDelay; shorter in tests

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
	addrs   []netip.Addr // the cached answer, until expires
	expires time.Time
	wait    chan struct{} // a lookup under way: closed when it ends
	err     error         // that lookup's
}

// newNameDialer resolves through the resolver at resolverAddr, reached
// with dial (the path's), and connects with dial too.
func newNameDialer(dial func(ctx context.Context, network, address string) (net.Conn, error), resolverAddr string) *nameDialer {
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
	dctx, cancel := untraced(ctx) // its attempts' hooks are not the connect's: that is timed here
	defer cancel()
	c, at, connected, err := dialFamilies(dctx, d.dial, network, addrs, port, d.fallback)
	if trace != nil && trace.ConnectDone != nil {
		if err == nil {
			first = net.JoinHostPort(at.String(), port)
		}
		trace.ConnectDone(network, first, err)
	}
	if l != nil && err == nil {
		l.family, l.connect = familyOf(at), connected.Sub(start)
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
func dialFamilies(ctx context.Context, dial func(ctx context.Context, network, address string) (net.Conn, error),
	network string, addrs []netip.Addr, port string, fallback time.Duration) (net.Conn, netip.Addr, time.Time, error) {
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
	running, fellBack := 1, false
	fallBack := func() {
		if !fellBack {
			fellBack = true
			running++
			race(fallbacks, false)
		}
	}
	var primaryErr, fallbackErr error
	for {
		select {
		case <-timer.C:
			fallBack()
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
				fallBack()
			} else {
				fallbackErr = r.err
			}
			if running == 0 {
				return nil, netip.Addr{}, time.Time{}, cmp.Or(primaryErr, fallbackErr)
			}
		}
	}
}

// dialSerial connects to each of addrs in turn until one answers.
func dialSerial(ctx context.Context, dial func(ctx context.Context, network, address string) (net.Conn, error),
	network string, addrs []netip.Addr, port string) (net.Conn, netip.Addr, error) {
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
		if e.err != nil {
			return nil, time.Since(start), e.err
		}
		return e.addrs, time.Since(start), nil
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
	// The lookup's own context, without the request's trace: its UDP
	// dial is not the request's TCP connect.
	lctx, cancel := untraced(ctx)
	defer cancel()
	d.ttlMu.Lock()
	d.ttl, d.gotTTL = 0, false
	d.ttlMu.Unlock()
	addrs, err := d.resolver.LookupNetIP(lctx, "ip", dns.Fqdn(name))
	if err != nil {
		return nil, 0, fmt.Errorf("resolve %s: %w", name, err)
	}
	addrs = preferred(addrs)
	if len(addrs) == 0 {
		return nil, 0, fmt.Errorf("resolve %s: no address in the answers", name)
	}
	d.ttlMu.Lock()
	ttl, got := d.ttl, d.gotTTL
	d.ttlMu.Unlock()
	if !got {
		ttl = 0
	}
	return addrs, ttl, nil
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
	slices.SortStableFunc(out, func(a, b netip.Addr) int {
		return cmp.Compare(boolInt(a.Is4()), boolInt(b.Is4()))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// msDuration is ms milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// untraced is a context that ends with ctx (its deadline, its
// cancellation) without its values, a request's httptrace among them.
func untraced(ctx context.Context) (context.Context, context.CancelFunc) {
	u, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	if dl, ok := ctx.Deadline(); ok {
		var c2 context.CancelFunc
		u, c2 = context.WithDeadline(u, dl)
		return u, func() { c2(); stop(); cancel() }
	}
	return u, func() { stop(); cancel() }
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
