package latencygap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
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

// dnsCond is a DNS condition of the grid: a DNS mode and, when it looks
// up, a family mode ("" for none).
type dnsCond struct{ mode, families string }

// dnsConds is the grid's DNS conditions: each DNS mode, and each one that
// looks up with each family mode (FamiliesA when none is given).
func (c *Config) dnsConds() []dnsCond {
	fams := orOnly(c.DNSFamilies, FamiliesA)
	var out []dnsCond
	for _, m := range orOnly(c.DNS, DNSNone) {
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
	return slices.ContainsFunc(c.dnsConds(), func(d dnsCond) bool { return d.families != "" && d.families != FamiliesA })
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

// validateDNS checks the DNS modes and the resolver's delay.
func (c *Config) validateDNS() error {
	if err := cmp.Or(checkList("dns", "%q", c.DNS, oneOf(DNSModes)), checkList("dns_families", "%q", c.DNSFamilies, oneOf(DNSFamilyModes))); err != nil {
		return err
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
	return slices.ContainsFunc(c.DNS, func(m string) bool { return m != DNSNone })
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
// aaaa-late after its AAAA delay more). Other names are NXDOMAIN. Nil,
// and no error, when s does not look the server up.
func startResolver(ctx context.Context, path *netem.Path, s Settings) (*resolver, error) {
	if !dnsOn(s) {
		return nil, nil
	}
	ttl, delay, late := time.Duration(0), msDuration(s.DNSDelayMS), time.Duration(0)
	if s.DNS == DNSCached {
		ttl = CachedTTL
	}
	var v6 netip.Addr
	switch s.DNSFamilies {
	case FamiliesBoth:
		v6 = path.ServerAddr6
	case FamiliesBlackhole:
		v6 = path.SilentAddr6
	case FamiliesLate:
		v6, late = path.ServerAddr6, msDuration(s.DNSAAAADelayMS)
	}
	if s.DNSFamilies != "" && s.DNSFamilies != FamiliesA && !v6.IsValid() {
		return nil, fmt.Errorf("resolver: dns families %s needs a path with IPv6", s.DNSFamilies)
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
				select {
				case <-time.After(delay): // its timer collected either way (Go 1.23 on)
				case <-r.stop:
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

// close stops the resolver (if any) and waits for it.
func (r *resolver) close() {
	if r == nil {
		return
	}
	close(r.stop)
	_ = r.srv.Shutdown()
	<-r.done
}
