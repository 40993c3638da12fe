package latencygap

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Kinds of load conditions (loadCond.kind, the kind column): a redirect
// chain before one resource, or a page and its sub-resources. A gap
// condition (one request per measurement) has none.
const (
	KindRedirect = "redirect"
	KindPage     = "page"
)

// Redirect origins (Config.RedirectOrigins).
const (
	// OriginSame: every hop and the resource on the server's origin, so a
	// kept-alive chain stays on its first connection.
	OriginSame = "same"
	// OriginCross: each hop redirects to another origin (another port,
	// and with DNS another name), so each hop needs a new connection and,
	// with DNS, a new lookup.
	OriginCross = "cross"
)

// RedirectOrigins lists the redirect origins.
var RedirectOrigins = []string{OriginSame, OriginCross}

// Page protocols (Config.PageProtocols).
const (
	// ProtoHTTP1: HTTP/1.1, at most MaxConnsPerOrigin connections per
	// origin, one request at a time on each (as browsers do).
	ProtoHTTP1 = "http/1.1"
	// ProtoHTTP2: HTTP/2 over TLS (ALPN h2), one connection per origin
	// carrying every request at once.
	ProtoHTTP2 = "h2"
)

// PageProtocols lists the page protocols.
var PageProtocols = []string{ProtoHTTP1, ProtoHTTP2}

// MaxConnsPerOrigin is the browsers' HTTP/1.1 limit of connections per
// origin.
const MaxConnsPerOrigin = 6

// MaxRedirects bounds a redirect chain (each cross hop is an origin).
const MaxRedirects = 3

// MaxPageResources bounds a page's sub-resources.
const MaxPageResources = 200

// loadCond is what a load condition loads: a redirect chain (redirects
// hops, on origin: OriginSame or OriginCross) or a page (resources
// sub-resources over proto); the zero value is a gap condition.
type loadCond struct {
	kind      string
	redirects int
	origin    string // the redirect_origin column ("" for a page)
	resources int
	proto     string
}

// idSuffix is what the condition adds to its run id.
func (l loadCond) idSuffix() string {
	switch l.kind {
	case KindRedirect:
		return fmt.Sprintf(".redirect%d%s", l.redirects, l.origin)
	case KindPage:
		return fmt.Sprintf(".page%d%s", l.resources, strings.ReplaceAll(l.proto, "/", ""))
	}
	return ""
}

// origins is how many origins the condition needs: the cross chain's
// hops and its resource, a page's two (one when it has no sub-resource).
func (l loadCond) origins() int {
	switch {
	case l.origin == OriginCross:
		return l.redirects + 1
	case l.kind == KindPage && l.resources > 0:
		return 2
	}
	return 1
}

// modes are the modes a load condition is measured in: kept alive (a
// first visit: new connections, each reused within the load) and, but
// for HTTP/2, new (a connection per request).
func (l loadCond) modes() []string {
	if l.proto == ProtoHTTP2 {
		return []string{ModeKeepAlive}
	}
	return []string{ModeKeepAlive, ModeNew}
}

// loads is the grid's load conditions, each on every path, TLS mode,
// work, DNS mode and size: the redirect chains (0 hops once, same
// origin), then the pages.
func (c *Config) loads() []loadCond {
	var out []loadCond
	origins := orOnly(c.RedirectOrigins, OriginSame)
	for _, n := range c.Redirects {
		for _, o := range origins {
			if n == 0 && o == OriginCross {
				if slices.Contains(origins, OriginSame) {
					continue
				}
				o = OriginSame // 0 hops has no origin to cross
			}
			out = append(out, loadCond{kind: KindRedirect, redirects: n, origin: o, proto: ProtoHTTP1})
		}
	}
	protos := orOnly(c.PageProtocols, ProtoHTTP1)
	for _, n := range c.Pages {
		for _, p := range protos {
			out = append(out, loadCond{kind: KindPage, resources: n, proto: p})
		}
	}
	return out
}

// validateLoads checks the redirect and page conditions.
func (c *Config) validateLoads() error {
	err := cmp.Or(checkList("redirects", "%d", c.Redirects, upTo(MaxRedirects, fmt.Sprintf("%d hops", MaxRedirects))),
		checkList("redirect_origins", "%q", c.RedirectOrigins, oneOf(RedirectOrigins)),
		checkList("pages", "%d", c.Pages, upTo(MaxPageResources, fmt.Sprintf("%d sub-resources", MaxPageResources))),
		checkList("page_protocols", "%q", c.PageProtocols, func(p string) string {
			if why := oneOf(PageProtocols)(p); why != "" {
				return why
			}
			if p == ProtoHTTP2 && slices.Contains(c.tlsModes(), TLSNone) {
				return "with tls none: browsers speak HTTP/2 over TLS only (ALPN h2); give tls 1.2, 1.3 or 1.3-resume alone"
			}
			return ""
		}))
	switch {
	case err != nil:
		return err
	case len(c.RedirectOrigins) > 0 && len(c.Redirects) == 0:
		return fmt.Errorf("redirect_origins %s without redirects: give the hops too (--redirects 1,2)", strings.Join(c.RedirectOrigins, ","))
	case len(c.PageProtocols) > 0 && len(c.Pages) == 0:
		return fmt.Errorf("page_protocols %s without pages: give the sub-resources too (--pages 10,50)", strings.Join(c.PageProtocols, ","))
	}
	return nil
}

// checkList checks a list field's values: what bad says is wrong with
// one ("" when nothing), and none given twice. verb formats a value.
func checkList[T comparable](field, verb string, xs []T, bad func(T) string) error {
	for i, x := range xs {
		v := fmt.Sprintf(verb, x)
		if why := bad(x); why != "" {
			sep := ": "
			if strings.HasPrefix(why, "with ") {
				sep = " "
			}
			return fmt.Errorf("%s[%d] %s%s%s", field, i, v, sep, why)
		}
		if slices.Index(xs, x) != i {
			return fmt.Errorf("%s[%d] %s: given twice", field, i, v)
		}
	}
	return nil
}

// upTo is checkList's bad for a value that must be from 0 to hi, which
// hiText writes.
func upTo[T ~int | ~int64 | float64](hi T, hiText string) func(T) string {
	return func(v T) string {
		if !(v >= 0 && v <= hi) { // NaN too
			return "allowed 0 to " + hiText
		}
		return ""
	}
}

// oneOf is checkList's bad for a value that must be one of allowed.
func oneOf(allowed []string) func(string) string {
	return func(v string) string {
		if slices.Contains(allowed, v) {
			return ""
		}
		return "allowed " + strings.Join(allowed, ", ")
	}
}

// newConnRTTs is what a new connection costs before its first request,
// in round trips: the TCP handshake and the TLS one (two for 1.2, one
// for 1.3, resumed or not).
func newConnRTTs(tls string) int {
	switch tls {
	case TLS12:
		return 3
	case TLS13, TLS13Resume:
		return 2
	}
	return 1
}

// bound is a load's lower bound from its path: what the configured
// delays, the TLS mode, the DNS mode and the limits of its protocol make
// certain, whatever the machine. rtts counts the round trips; lookups
// the cold lookups (each a round trip and the resolver's delay) that
// cannot overlap; the bound in time is their sum.
type bound struct {
	rtts    int
	lookups int
}

// boundMS is a load's lower bound in milliseconds on the path of s.
func boundMS(l loadCond, mode string, s Settings) float64 {
	return loadBound(l, mode, s).ms(s.DelayUpMS+s.DelayDownMS, s.DNSDelayMS)
}

// ms is the bound in milliseconds on a path of rtt ms round trip with a
// resolver that waits dnsDelay ms.
func (b bound) ms(rtt, dnsDelay float64) float64 {
	return float64(b.rtts)*rtt + float64(b.lookups)*(rtt+dnsDelay)
}

// loadBound is the lower bound of a load in mode over the TLS and DNS
// mode of s (see bound): every request waits a round trip for its
// answer; a request on a new connection first waits for the connection
// (newConnRTTs) and, with a cold DNS mode, for a lookup of its name.
//
// A redirect chain of k hops kept alive on one origin opens one
// connection and sends k+1 requests one after another; across origins
// each of its k+1 requests opens its own (so it costs k new connections
// more than the same-origin chain); without keep-alive every request
// does.
//
// A page is its document (a new connection, a request), then its
// sub-resources, half on the document's origin (the even ones) and half
// on another. Over HTTP/1.1 an origin's n requests take ceil(n/6) round
// trips at least (6 connections, one request at a time on each; kept
// alive, the other origin's start with a new connection); without
// keep-alive each of those rounds opens its connections too (their
// lookups may overlap, so only the first counts). Over HTTP/2 each
// origin's requests all go at once on one connection: one round trip
// (and the other origin's new connection).
func loadBound(l loadCond, mode string, s Settings) bound {
	conn := newConnRTTs(s.TLS)
	look := 0
	if s.DNS == DNSCold {
		look = 1
	}
	switch l.kind {
	case KindRedirect:
		reqs := l.redirects + 1
		if l.origin == OriginCross || mode == ModeNew {
			return bound{rtts: reqs * (conn + 1), lookups: reqs * look}
		}
		return bound{rtts: conn + reqs, lookups: look}
	case KindPage:
		doc := bound{rtts: conn + 1, lookups: look}
		nA, nB := (l.resources+1)/2, l.resources/2
		rounds := func(n int) int { return int(math.Ceil(float64(n) / MaxConnsPerOrigin)) }
		var a, b bound
		switch {
		case l.proto == ProtoHTTP2:
			a = bound{rtts: min(nA, 1)}
			if nB > 0 {
				b = bound{rtts: conn + 1, lookups: look}
			}
		case mode == ModeNew:
			a = bound{rtts: rounds(nA) * (conn + 1), lookups: min(nA, 1) * look}
			b = bound{rtts: rounds(nB) * (conn + 1), lookups: min(nB, 1) * look}
		default:
			a = bound{rtts: rounds(nA)}
			if nB > 0 {
				b = bound{rtts: conn + rounds(nB), lookups: look}
			}
		}
		if rtt := s.DelayUpMS + s.DelayDownMS; b.ms(rtt, s.DNSDelayMS) > a.ms(rtt, s.DNSDelayMS) {
			a = b
		}
		return bound{rtts: doc.rtts + a.rtts, lookups: doc.lookups + a.lookups}
	}
	return bound{}
}

// loadsExpected is how long a load condition's loads may take, for the
// run loop's progress: its bound with room, per load and mode.
func loadsExpected(l loadCond, s Settings, p pathCond, w time.Duration, n int) time.Duration {
	var total time.Duration
	for _, m := range l.modes() {
		b := loadBound(l, m, s)
		total += time.Duration(b.rtts+2)*p.rtt() + time.Duration(b.lookups)*(p.rtt()+time.Duration(s.DNSDelayMS*float64(time.Millisecond))) +
			time.Duration(l.redirects+2)*w + 5*time.Millisecond
	}
	return time.Duration(n) * total
}
