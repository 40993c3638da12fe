package latencygap

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// at50 are a condition's settings at 50 ms RTT in a TLS and DNS mode.
func at50(tls, dns string) Settings {
	return Settings{TLS: tls, DelayUpMS: 25, DelayDownMS: 25, DNS: dns, DNSDelayMS: 20, WorkKind: WorkSleep}
}

// TestLoadBounds: the bounds follow from the path alone. Each
// cross-origin redirect costs at least a new connection (a connect
// round trip, and the TLS handshake's) beyond the same-origin chain, and
// with cold DNS a lookup too; a 50-resource page over HTTP/1.1 takes at
// least ceil(25/6) round trips beyond the document on the document's
// origin and a new connection and ceil(25/6) on the other; over HTTP/2
// fewer (one round trip, and the other origin's connection).
func TestLoadBounds(t *testing.T) {
	plain, tls13, cold := at50(TLSNone, DNSNone), at50(TLS13, DNSNone), at50(TLSNone, DNSCold)
	for k := 1; k <= MaxRedirects; k++ {
		same, cross := loadCond{kind: KindRedirect, redirects: k, origin: OriginSame}, loadCond{kind: KindRedirect, redirects: k, origin: OriginCross}
		for _, tc := range []struct {
			s        Settings
			perCross float64 // ms each cross hop adds at least
		}{{plain, 50}, {tls13, 100}, {cold, 50 + 70}} {
			d := boundMS(cross, ModeKeepAlive, tc.s) - boundMS(same, ModeKeepAlive, tc.s)
			if d != float64(k)*tc.perCross {
				t.Errorf("%d redirects, tls %s, dns %s: cross origin %g ms beyond same, want %d x %g", k, tc.s.TLS, tc.s.DNS, d, k, tc.perCross)
			}
		}
		if b := loadBound(same, ModeKeepAlive, plain); b.rtts != k+2 {
			t.Errorf("%d redirects on one origin: %d round trips, want connect + %d requests", k, b.rtts, k+1)
		}
	}
	page := func(n int, proto string) loadCond { return loadCond{kind: KindPage, resources: n, proto: proto} }
	doc := loadBound(page(0, ProtoHTTP1), ModeKeepAlive, plain).rtts
	if doc != 2 {
		t.Errorf("a page without sub-resources: %d round trips, want 2 (connect, document)", doc)
	}
	h1 := loadBound(page(50, ProtoHTTP1), ModeKeepAlive, plain).rtts
	if want := doc + 1 + 5; h1 != want { // the other origin's connect, ceil(25/6) rounds
		t.Errorf("50-resource page over HTTP/1.1: %d round trips, want %d", h1, want)
	}
	h2 := loadBound(page(50, ProtoHTTP2), ModeKeepAlive, tls13).rtts
	h1tls := loadBound(page(50, ProtoHTTP1), ModeKeepAlive, tls13).rtts
	if h2 >= h1tls || h2 != 3+3 {
		t.Errorf("50-resource page over TLS 1.3: HTTP/2 %d round trips, HTTP/1.1 %d: want HTTP/2 6 (document 3, other origin 3), fewer", h2, h1tls)
	}
	if n := loadBound(page(50, ProtoHTTP1), ModeNew, plain).rtts; n != doc+5*2 {
		t.Errorf("50-resource page without keep-alive: %d round trips, want %d (each round a connect and a request)", n, doc+10)
	}
}

// goodLoads are loads and requests that meet every check: a kept-alive
// same-origin chain of 1 hop, a cross-origin one and HTTP/2 and
// HTTP/1.1 pages of 10, at 50 ms RTT.
func goodLoads() ([]Load, []Fetch) {
	s := at50(TLS13, DNSNone)
	key := func(kind string, redirects int, origin string, resources int, proto string) LoadKey {
		return LoadKey{RunID: "r", Kind: kind, Mode: ModeKeepAlive, Protocol: proto, Redirects: redirects, RedirectOrigin: origin,
			Resources: resources, SizeBytes: 1024, ConfiguredRTTMS: 50}
	}
	loads := []Load{
		{LoadKey: key(KindRedirect, 1, OriginSame, 0, ProtoHTTP1), Requests: 2, Connections: 1, LoadMS: 201, Settings: s},
		{LoadKey: key(KindRedirect, 1, OriginCross, 0, ProtoHTTP1), Requests: 2, Connections: 2, LoadMS: 301, Settings: s},
		{LoadKey: key(KindPage, 0, "", 10, ProtoHTTP2), Requests: 11, Connections: 2, LoadMS: 320, Settings: s},
		{LoadKey: key(KindPage, 0, "", 10, ProtoHTTP1), Requests: 11, Connections: 8, LoadMS: 310, Settings: s},
	}
	fetches := []Fetch{{LoadKey: loads[1].LoadKey, Hop: 1, Role: RoleResource, NewConn: true, ConnectMS: recorder.Some(50.4), Settings: s}}
	return loads, fetches
}

// TestCheckLoads: the good loads pass; each corruption fails the check
// it breaks, naming the load.
func TestCheckLoads(t *testing.T) {
	loads, fetches := goodLoads()
	if errs := checkLoads(loads, fetches); len(errs) > 0 {
		t.Fatalf("good loads: %v", errs)
	}
	for _, tc := range []struct {
		name    string
		corrupt func([]Load, []Fetch)
		want    string
	}{
		{"same-origin chain faster than its bound", func(l []Load, _ []Fetch) { l[0].LoadMS = 199 },
			"r keepalive load 0: 199.000 ms, under its bound from the path 200 ms (1 redirect, same)"},
		{"cross-origin chain only a same-origin one's time", func(l []Load, _ []Fetch) { l[1].LoadMS = 201 },
			"under its bound from the path 300 ms (1 redirect, cross)"},
		{"cross-origin chain on one connection", func(l []Load, _ []Fetch) { l[1].Connections = 1 },
			"1 connections for 2 requests, each on its own origin or without keep-alive: want one each"},
		{"same-origin chain not kept alive", func(l []Load, _ []Fetch) { l[0].Connections = 2 }, "2 connections, kept alive on one origin: want 1"},
		{"HTTP/2 page on more connections", func(l []Load, _ []Fetch) { l[2].Connections = 3 },
			"3 connections over HTTP/2 to 2 origins: want one per origin"},
		{"HTTP/2 page faster than its bound", func(l []Load, _ []Fetch) { l[2].LoadMS = 250 }, "under its bound from the path 300 ms (page 10, h2)"},
		{"HTTP/1.1 page on more than 6 per origin", func(l []Load, _ []Fetch) { l[3].Connections = 13 },
			"13 connections over HTTP/1.1 to 2 origins: at most 6 per origin"},
		{"HTTP/1.1 page faster than its bound", func(l []Load, _ []Fetch) { l[3].LoadMS = 290 },
			"under its bound from the path 300 ms (page 10, http/1.1)"},
		{"a connect shorter than the round trip", func(_ []Load, f []Fetch) { f[0].ConnectMS = recorder.Some(20) },
			"r keepalive load 0 request 1: connect {20 true} ms on a new connection, under the path's round trip 50 ms"},
		{"a cold lookup shorter than a round trip", func(_ []Load, f []Fetch) {
			f[0].DNS, f[0].DNSFamilies, f[0].Family, f[0].DNSMS = DNSCold, FamiliesA, FamilyIPv4, recorder.Some(60)
		}, "cold lookup {60 true} ms, under a round trip and the resolver's delay 70 ms"},
		{"IPv4 with a reachable AAAA", func(_ []Load, f []Fetch) {
			f[0].DNS, f[0].DNSFamilies, f[0].Family, f[0].DNSMS = DNSCold, FamiliesBoth, FamilyIPv4, recorder.Some(71)
		}, `r keepalive load 0 request 1: connected over "ipv4" with dns families a+aaaa: want ipv6`},
		{"no fallback past a blackholed AAAA", func(_ []Load, f []Fetch) {
			f[0].DNS, f[0].DNSFamilies, f[0].Family, f[0].DNSMS = DNSCached, FamiliesBlackhole, FamilyIPv4, recorder.Some(0)
		}, "r keepalive load 0 request 1: connect 50.400 ms past an unanswered IPv6 address, under the fallback delay and a round trip 350 ms"},
	} {
		l, f := goodLoads()
		tc.corrupt(l, f)
		errs := checkLoads(l, f)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%s: %v, want one error with %q", tc.name, errs, tc.want)
		}
	}
}

// TestValidateLoads: bad redirect and page conditions are refused,
// naming the field.
func TestValidateLoads(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Redirects = []int{1, 4} }, "redirects[1] 4: allowed 0 to 3 hops"},
		{func(c *Config) { c.Redirects = []int{1, 1} }, "redirects[1] 1: given twice"},
		{func(c *Config) { c.Redirects, c.RedirectOrigins = []int{1}, []string{"elsewhere"} }, `redirect_origins[0] "elsewhere": allowed same, cross`},
		{func(c *Config) { c.RedirectOrigins = []string{"cross"} }, "redirect_origins cross without redirects: give the hops too (--redirects 1,2)"},
		{func(c *Config) { c.Pages = []int{10, 201} }, "pages[1] 201: allowed 0 to 200 sub-resources"},
		{func(c *Config) { c.Pages, c.PageProtocols = []int{10}, []string{"h3"} }, `page_protocols[0] "h3": allowed http/1.1, h2`},
		{func(c *Config) { c.Pages, c.PageProtocols = []int{10}, []string{"h2"} },
			`page_protocols[0] "h2" with tls none: browsers speak HTTP/2 over TLS only (ALPN h2); give tls 1.2, 1.3 or 1.3-resume alone`},
		{func(c *Config) { c.PageProtocols = []string{"h2"}; c.TLS = []string{TLS13} }, "page_protocols h2 without pages: give the sub-resources too (--pages 10,50)"},
	} {
		c := Published()
		tc.change(c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := Published()
	c.Redirects, c.RedirectOrigins, c.Pages, c.PageProtocols, c.TLS = []int{0, 1, 2}, []string{OriginSame, OriginCross}, []int{10, 50},
		[]string{ProtoHTTP1, ProtoHTTP2}, []string{TLS13}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range c.loads() {
		ids = append(ids, strings.TrimPrefix(l.idSuffix(), "."))
	}
	if got := strings.Join(ids, " "); got != "redirect0same redirect1same redirect1cross redirect2same redirect2cross page10http1.1 page10h2 page50http1.1 page50h2" {
		t.Errorf("load conditions %s", got)
	}
}

// runLoads runs c and returns its loads and requests, failing on any
// load with an error and on any check of checkLoads.
func runLoads(t *testing.T, c *Config) (*Result, []Load, []Fetch, string) {
	t.Helper()
	res, out := runSession(t, c)
	loads, err := recorder.ReadFile[Load](filepath.Join(out, loadFile))
	if err != nil {
		t.Fatal(err)
	}
	fetches, err := recorder.ReadFile[Fetch](filepath.Join(out, fetchFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range loads {
		if l.Error != "" {
			t.Errorf("%s %s load %d: %s", l.RunID, l.Mode, l.Load, l.Error)
		}
	}
	for _, err := range checkLoads(loads, fetches) {
		t.Error(err)
	}
	return res, loads, fetches, out
}

// TestLatencyGapRedirects loads 1 KB behind one and two redirects, on
// the server's origin and across origins, at 50 ms RTT, with the
// server's IP and with a cold lookup (the resolver 20 ms slow): every
// load meets its bounds (checkLoads), each hop is a row that says it,
// and each cross-origin hop went to the next origin on its own
// connection, after its own lookup with DNS.
func TestLatencyGapRedirects(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := Published()
	// Two loads per mode and cell, not three: each load is checked on its
	// own (checkLoads, the hops' rows), the warm-up load goes first, and a
	// third repeats the second.
	c.Delays, c.Sizes, c.Runs = []lab.Duration{lab.Duration(25 * time.Millisecond)}, []lab.Size{1024}, 2
	c.Redirects, c.RedirectOrigins = []int{1, 2}, RedirectOrigins
	c.DNS, c.DNSDelay = []string{DNSNone, DNSCold}, lab.Duration(20*time.Millisecond)
	res, loads, fetches, _ := runLoads(t, c)
	if want := 2 * 2 * 2 * 2; len(res.Pages) != want { // hops x origins x dns x modes
		t.Errorf("%d rows in %s, want %d", len(res.Pages), pageFile, want)
	}
	if want := 2 * 2 * 2 * 2 * c.Runs; len(loads) != want {
		t.Errorf("%d loads, want %d", len(loads), want)
	}
	for _, f := range fetches {
		wantRole := RoleHop
		if f.Hop == f.Redirects {
			wantRole = RoleResource
		}
		wantOrigin := 1
		if f.RedirectOrigin == OriginCross {
			wantOrigin = f.Hop + 1
		}
		if f.Role != wantRole || f.Origin != wantOrigin || f.Hop > f.Redirects {
			t.Errorf("%s %s load %d hop %d: role %s origin %d, want %s on origin %d", f.RunID, f.Mode, f.Load, f.Hop, f.Role, f.Origin, wantRole, wantOrigin)
		}
		if f.RedirectOrigin == OriginCross && f.DNS == DNSCold && (!f.NewConn || !f.DNSMS.Valid) {
			t.Errorf("%s %s load %d hop %d: cross origin, cold DNS: new connection %t, lookup %v: want both", f.RunID, f.Mode, f.Load, f.Hop, f.NewConn, f.DNSMS)
		}
	}
}

// TestLatencyGapPages loads pages of 10 and 50 sub-resources over
// HTTP/1.1 and HTTP/2 (TLS 1.3) at 50 ms RTT: every load meets its
// bounds (checkLoads: its time, its connections per origin), every
// sub-resource arrived by the protocol asked, half on each origin, and
// the report draws the waterfall and the table.
func TestLatencyGapPages(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := Published()
	// Two loads per mode and page, not three: each load is checked on its
	// own (checkLoads, each request's protocol, the sub-resources per
	// origin counted over the loads), as in TestLatencyGapRedirects.
	c.Delays, c.Sizes, c.Runs, c.TLS = []lab.Duration{lab.Duration(25 * time.Millisecond)}, []lab.Size{1024}, 2, []string{TLS13}
	c.Pages, c.PageProtocols = []int{10, 50}, PageProtocols
	res, loads, fetches, out := runLoads(t, c)
	if want := 2 * 3; len(res.Pages) != want { // sizes x (http/1.1 in two modes, h2 kept alive)
		t.Errorf("%d rows in %s, want %d", len(res.Pages), pageFile, want)
	}
	if want := 2 * 3 * c.Runs; len(loads) != want {
		t.Errorf("%d loads, want %d", len(loads), want)
	}
	perOrigin := map[[2]int]int{}
	for _, f := range fetches {
		wantProto := "HTTP/1.1"
		if f.Protocol == ProtoHTTP2 {
			wantProto = "HTTP/2.0"
		}
		if f.Proto != wantProto {
			t.Errorf("%s %s load %d request %d: %s, want %s", f.RunID, f.Mode, f.Load, f.Hop, f.Proto, wantProto)
		}
		if f.Role == RoleSubresource {
			perOrigin[[2]int{f.Resources, f.Origin}]++
		}
	}
	for _, n := range c.Pages {
		if a, b := perOrigin[[2]int{n, 1}], perOrigin[[2]int{n, 2}]; a != b || a != 3*c.Runs*n/2 {
			t.Errorf("page of %d: %d sub-resources from origin 1, %d from origin 2, want %d each", n, a, b, 3*c.Runs*n/2)
		}
	}
	rep := labtest.ReportFrom(t, out, []report.Section{Section}, gapFile, pageFile, fetchFile)
	if f := labtest.Figure(t, rep, "latency-gap-waterfall"); f.Series == 0 {
		t.Errorf("waterfall: no series")
	}
}
