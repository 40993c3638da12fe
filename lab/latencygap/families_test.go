package latencygap

import (
	"context"
	"errors"
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// TestPreferred: IPv6 addresses first, as RFC 6724's default policy
// orders a global IPv6 destination before an IPv4 one; mapped IPv4
// addresses are IPv4.
func TestPreferred(t *testing.T) {
	in := []netip.Addr{netip.MustParseAddr("::ffff:10.255.1.2"), netip.MustParseAddr("2001:db8:ff:1::2"), netip.MustParseAddr("10.255.1.3")}
	got := preferred(in)
	if len(got) != 3 || got[0] != in[1] || got[1] != netip.MustParseAddr("10.255.1.2") || got[2] != in[2] {
		t.Errorf("preferred(%v) = %v", in, got)
	}
}

// silentDial is a dial func that connects IPv4 addresses to a real
// listener on loopback and leaves IPv6 ones unanswered until ctx ends,
// as a SYN to an address that never answers: it records each attempt.
type silentDial struct {
	ln       net.Listener
	attempts chan netip.Addr
	late     chan net.Conn // set: an IPv6 attempt connects once ctx ends, as a late loser
	fail6    bool          // an IPv6 attempt fails at once (a route that refuses)
}

func (s *silentDial) dial(ctx context.Context, network, address string) (net.Conn, error) {
	ap := netip.MustParseAddrPort(address)
	s.attempts <- ap.Addr()
	if ap.Addr().Is4() {
		return (&net.Dialer{}).DialContext(ctx, "tcp", s.ln.Addr().String())
	}
	if s.fail6 {
		return nil, errors.New("network is unreachable")
	}
	<-ctx.Done()
	if s.late != nil {
		c, err := net.Dial("tcp", s.ln.Addr().String())
		if err == nil {
			s.late <- c
			return c, nil
		}
	}
	return nil, ctx.Err()
}

// newSilentDial listens on loopback: the kernel completes each
// handshake into the backlog, so a dial connects without an Accept.
func newSilentDial(t *testing.T) *silentDial {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &silentDial{ln: ln, attempts: make(chan netip.Addr, 8)}
}

var (
	v6addr = netip.MustParseAddr("2001:db8:ff:1::dead")
	v4addr = netip.MustParseAddr("127.0.0.1")
)

// TestDialFamilies races the families as Go's net.Dialer does, against a
// real listener on loopback for IPv4 and an IPv6 address that never
// answers: IPv4 starts only after the fallback delay (the IPv6 attempt
// alone until then) and wins, the IPv6 attempt is cancelled and its
// connection, should it come late, closed; a failed IPv6 attempt starts
// IPv4 at once (a fallback delay of an hour would hold the test up);
// one family alone is dialed in order; every attempt failing returns the
// preferred family's error.
func TestDialFamilies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newSilentDial(t)
	s.late = make(chan net.Conn, 1)
	const fallback = 50 * time.Millisecond
	start := time.Now()
	c, at, connected, err := dialFamilies(ctx, s.dial, "tcp", []netip.Addr{v6addr, v4addr}, "80", fallback)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if at != v4addr || connected.Sub(start) < fallback {
		t.Errorf("connected to %s after %s: want IPv4 after the fallback delay %s", at, connected.Sub(start), fallback)
	}
	if a, b := <-s.attempts, <-s.attempts; a != v6addr || b != v4addr {
		t.Errorf("attempts %s then %s: want IPv6 first", a, b)
	}
	late := <-s.late
	if _, err := late.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the late IPv6 connection: write %v, want it closed", err)
	}

	s.late, s.fail6 = nil, true
	if _, at, _, err := dialFamilies(ctx, s.dial, "tcp", []netip.Addr{v6addr, v4addr}, "80", time.Hour); err != nil || at != v4addr {
		t.Errorf("IPv6 refused: %s, %v; want IPv4 at once", at, err)
	}
	<-s.attempts
	<-s.attempts

	if _, at, _, err := dialFamilies(ctx, s.dial, "tcp", []netip.Addr{v4addr}, "80", time.Hour); err != nil || at != v4addr {
		t.Errorf("IPv4 alone: %s, %v", at, err)
	}
	<-s.attempts
	_, _, _, err = dialFamilies(ctx, s.dial, "tcp", []netip.Addr{v6addr, netip.MustParseAddr("2001:db8:ff:1::beef")}, "80", time.Hour)
	if err == nil || !strings.Contains(err.Error(), "unreachable") || len(s.attempts) != 2 {
		t.Errorf("IPv6 alone, both refused: %v after %d attempts; want the error after both", err, len(s.attempts))
	}
}

// goodRequests are new-connection requests that meet every bound of
// checkRequests at 50 ms RTT: a cold lookup with the resolver 20 ms
// slow, over IPv4 (a), over IPv6 (a+aaaa), over IPv4 past a silent
// IPv6 address (aaaa-blackhole) and over IPv6 after an AAAA answer
// 100 ms late (aaaa-late), then one without DNS.
func goodRequests() []Request {
	st := Settings{DelayUpMS: 25, DelayDownMS: 25, DNS: DNSCold, DNSDelayMS: 20}
	var out []Request
	for i, f := range []struct{ families, family string }{{FamiliesA, FamilyIPv4}, {FamiliesBoth, FamilyIPv6}, {FamiliesBlackhole, FamilyIPv4},
		{FamiliesLate, FamilyIPv6}} {
		s := st
		s.DNSFamilies = f.families
		connect, lookup := 51.0, 71.0
		switch f.families {
		case FamiliesBlackhole:
			connect = 352
		case FamiliesLate:
			s.DNSAAAADelayMS, lookup = 100, 171
		}
		out = append(out, Request{RunID: "r", Mode: ModeNew, Seq: i, NewConn: true, Status: 200, ConnectMS: connect,
			DNSMS: recorder.Some(lookup), Family: f.family, Settings: s})
	}
	return append(out, Request{RunID: "r", Mode: ModeNew, Seq: 4, NewConn: true, Status: 200, ConnectMS: 50,
		Settings: Settings{DelayUpMS: 25, DelayDownMS: 25, DNS: DNSNone}})
}

// TestCheckRequests feeds checkRequests good requests, then each one
// corrupted as a broken client would leave it, and sees each check fail.
func TestCheckRequests(t *testing.T) {
	if errs := checkRequests(goodRequests()); len(errs) > 0 {
		t.Fatalf("good requests: %v", errs)
	}
	for _, tc := range []struct {
		name    string
		corrupt func(r []Request)
		want    string
	}{
		{"a connect shorter than the round trip", func(r []Request) { r[4].ConnectMS = 30 },
			"r new request 4: connect 30.000 ms on a new connection, under the path's round trip 50 ms"},
		{"a lookup not waiting for the late AAAA", func(r []Request) { r[3].DNSMS = recorder.Some(75) },
			"r new request 3: cold lookup {75 true} ms, under a round trip and the resolver's delay 170 ms"},
		{"IPv4 after a late AAAA", func(r []Request) { r[3].Family = FamilyIPv4 },
			`r new request 3: connected over "ipv4" with dns families aaaa-late: want ipv6`},
		{"a v6 connect shorter than the round trip", func(r []Request) { r[1].ConnectMS = 49 },
			"r new request 1: connect 49.000 ms on a new connection, under the path's round trip 50 ms"},
		{"a cold lookup shorter than a round trip and the delay", func(r []Request) { r[0].DNSMS = recorder.Some(60) },
			"r new request 0: cold lookup {60 true} ms, under a round trip and the resolver's delay 70 ms"},
		{"a cold lookup not recorded", func(r []Request) { r[1].DNSMS = recorder.None() }, "r new request 1: cold lookup"},
		{"IPv4 with a reachable AAAA", func(r []Request) { r[1].Family = FamilyIPv4 },
			`r new request 1: connected over "ipv4" with dns families a+aaaa: want ipv6`},
		{"IPv6 with AAAA empty", func(r []Request) { r[0].Family = FamilyIPv6 },
			`r new request 0: connected over "ipv6" with dns families a: want ipv4`},
		{"the family not recorded", func(r []Request) { r[2].Family = "" }, `connected over "" with dns families aaaa-blackhole`},
		{"no fallback past a blackholed AAAA", func(r []Request) { r[2].ConnectMS = 51 },
			"r new request 2: connect 51.000 ms past an unanswered IPv6 address, under the fallback delay and a round trip 350 ms"},
	} {
		r := goodRequests()
		tc.corrupt(r)
		errs := checkRequests(r)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%s: %v, want one error with %q", tc.name, errs, tc.want)
		}
	}
}

// TestValidateFamilies: bad family modes are refused, naming the field;
// the grid has each with each DNS mode that looks up, and only then
// a path with IPv6.
func TestValidateFamilies(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.DNS, c.DNSFamilies = []string{DNSCold}, []string{"aaaa"} },
			`dns_families[0] "aaaa": allowed a, a+aaaa, aaaa-blackhole, aaaa-late`},
		{func(c *Config) { c.DNS, c.DNSFamilies = []string{DNSCold}, []string{FamiliesA, FamiliesA} }, `dns_families[1] "a": given twice`},
		{func(c *Config) { c.DNSFamilies = []string{FamiliesBoth} },
			"dns_families a+aaaa without a dns condition that looks up: give dns cold or cached (--dns cold,cached)"},
		{func(c *Config) { c.DNS, c.DNSFamilies = []string{DNSCold}, []string{FamiliesLate} },
			"dns_families aaaa-late without dns_aaaa_delay: give how much later AAAA is answered (--dns-aaaa-delay 100ms)"},
		{func(c *Config) { c.DNS, c.DNSAAAADelay = []string{DNSCold}, lab.Duration(100*time.Millisecond) },
			"dns_aaaa_delay 100ms without dns_families aaaa-late: give it (--dns-families a,aaaa-late)"},
		{func(c *Config) {
			c.DNS, c.DNSFamilies, c.DNSDelay, c.DNSAAAADelay = []string{DNSCold}, []string{FamiliesLate}, lab.Duration(time.Second), lab.Duration(5*time.Second)
		}, "dns_aaaa_delay 5s: allowed 0 to 4s with dns_delay"},
	} {
		c := Published()
		tc.change(c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := Published()
	c.DNS, c.DNSFamilies, c.DNSAAAADelay = []string{DNSNone, DNSCold}, DNSFamilyModes, lab.Duration(100*time.Millisecond)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.dnsConds(); len(got) != 5 || got[0] != (dnsCond{mode: DNSNone}) || got[4] != (dnsCond{DNSCold, FamiliesLate}) {
		t.Errorf("dns conditions %v", got)
	}
	if !c.ipv6() {
		t.Error("a+aaaa and aaaa-blackhole: no IPv6 on the path")
	}
	c.DNSFamilies, c.DNSAAAADelay = []string{FamiliesA}, 0
	if c.ipv6() {
		t.Error("a alone: IPv6 on the path")
	}
}

// TestLatencyGapDNSFamilies measures 1 KB at 50 ms RTT with a cold
// lookup (the resolver 20 ms slow) and a cached one, the AAAA answer
// empty, the server's IPv6 address, one that never answers, and the
// server's IPv6 address 100 ms after the A answer: every request meets
// checkRequests' bounds (each lookup at least 1 RTT and the delays, a
// connect over IPv6 at least 1 RTT, one past the silent IPv6 address at
// least the 300 ms fallback and 1 RTT, each over the family its answer
// leaves it), and the rows say the families.
func TestLatencyGapDNSFamilies(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := Published()
	c.Delays, c.Sizes, c.Runs = []lab.Duration{lab.Duration(25 * time.Millisecond)}, []lab.Size{1024}, 4
	c.DNS, c.DNSDelay, c.DNSFamilies = []string{DNSCold, DNSCached}, lab.Duration(20*time.Millisecond), DNSFamilyModes
	c.DNSAAAADelay = lab.Duration(100 * time.Millisecond)
	rows, reqs := runGap(t, c)
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	for _, err := range checkRequests(reqs) {
		t.Error(err)
	}
	for _, r := range reqs {
		if !okRequest(r) {
			t.Errorf("%s %s %d: %d %s", r.RunID, r.Mode, r.Seq, r.Status, r.Error)
		}
	}
	for _, r := range rows {
		g := r.Gap
		want := 0.0
		if g.DNSFamilies == FamiliesBoth || g.DNSFamilies == FamiliesLate {
			want = 100
		}
		if g.Runs != c.Runs || !g.IPv6Pct.Valid || g.IPv6Pct.Value != want || !g.ConnectMS.Valid {
			t.Errorf("%s: %d runs, ipv6 %v%%, connect %v: want %d, %g%% and a connect", g.RunID, g.Runs, g.IPv6Pct, g.ConnectMS, c.Runs, want)
		}
		t.Logf("%s: new connection %.1f ms, connect %.1f ms, lookup %.1f ms", g.RunID, g.ClientNewMS.Value, g.ConnectMS.Value, g.DNSMS.Value)
	}
}

// TestPhasesSplitDNS: a new connection's phases (the phase figure's)
// add up to its total, its lookup apart from its request: a cold lookup
// of 72 ms and a connect past a blackholed AAAA of 352 ms leave the
// request its one round trip; without DNS the lookup phase is 0.
func TestPhasesSplitDNS(t *testing.T) {
	for _, r := range []Request{
		{ConnectMS: 352, TTFBMS: 72 + 352 + 50.5, TotalMS: 475, DNSMS: recorder.Some(72)},
		{ConnectMS: 50, TTFBMS: 100.5, TotalMS: 101},
	} {
		var got []float64
		sum := 0.0
		for _, ph := range phases {
			v := ph.get(&r)
			if math.IsNaN(v) {
				t.Fatalf("%s: no value for %+v", ph.name, r)
			}
			got, sum = append(got, v), sum+v
		}
		if got[0] != or0(r.DNSMS) || got[1] != r.ConnectMS || got[3] != 50.5 || sum != r.TotalMS {
			t.Errorf("phases of %+v: %v (sum %g); want the lookup, the connect, 50.5 ms to the first byte, summing to the total", r, got, sum)
		}
	}
}
