package latencygap

import (
	"fmt"
)

// boundSlack is what a measured time may fall short of its bound by:
// the clocks' granularity, not the path's.
const boundSlack = 0.1 // ms

// loadCondOf is the load condition a row's key names.
func loadCondOf(k LoadKey) loadCond {
	return loadCond{kind: k.Kind, redirects: k.Redirects, origin: k.RedirectOrigin, resources: k.Resources, proto: k.Protocol}
}

// checkLoads checks the ok loads of a session, and their requests,
// against what their configuration makes certain whatever the machine:
//
//   - a load takes at least its bound (loadBound, computed here from its
//     condition and settings, not read from its row);
//   - a cross-origin chain opens a connection for each of its requests,
//     a kept-alive same-origin one a single connection;
//   - a kept-alive HTTP/2 page opens one connection per origin, an
//     HTTP/1.1 one at most MaxConnsPerOrigin per origin, and every
//     request of a page without keep-alive opens its own;
//   - every request on a new connection waited at least a round trip to
//     connect, and a cold lookup at least a round trip and the
//     resolver's delay; after a lookup it went over the family the AAAA
//     answer leaves it, past a blackholed one after FallbackDelay
//     (checkFamily).
//
// It returns what failed, one error each.
func checkLoads(loads []Load, fetches []Fetch) []error {
	var errs []error
	bad := func(l *Load, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %s load %d: %s", l.RunID, l.Mode, l.Load, fmt.Sprintf(format, args...)))
	}
	for i := range loads {
		l := &loads[i]
		if l.Error != "" {
			continue
		}
		c := loadCondOf(l.LoadKey)
		if b := boundMS(c, l.Mode, l.Settings); l.LoadMS < b-boundSlack {
			bad(l, "%.3f ms, under its bound from the path %.0f ms (%s)", l.LoadMS, b, loadLabel(l.LoadKey))
		}
		origins := c.origins()
		switch {
		case c.kind == KindRedirect && (c.origin == OriginCross || l.Mode == ModeNew) && l.Connections != c.redirects+1:
			bad(l, "%d connections for %d requests, each on its own origin or without keep-alive: want one each", l.Connections, c.redirects+1)
		case c.kind == KindRedirect && c.origin == OriginSame && l.Mode == ModeKeepAlive && l.Connections != 1:
			bad(l, "%d connections, kept alive on one origin: want 1", l.Connections)
		case c.kind == KindPage && c.proto == ProtoHTTP2 && l.Connections != origins:
			bad(l, "%d connections over HTTP/2 to %d origins: want one per origin", l.Connections, origins)
		case c.kind == KindPage && c.proto == ProtoHTTP1 && l.Mode == ModeKeepAlive && l.Connections > MaxConnsPerOrigin*origins:
			bad(l, "%d connections over HTTP/1.1 to %d origins: at most %d per origin", l.Connections, origins, MaxConnsPerOrigin)
		case c.kind == KindPage && l.Mode == ModeNew && l.Connections != l.Requests:
			bad(l, "%d connections for %d requests without keep-alive: want one each", l.Connections, l.Requests)
		}
	}
	for i := range fetches {
		f := &fetches[i]
		if f.Error != "" || !f.NewConn {
			continue
		}
		rtt := f.DelayUpMS + f.DelayDownMS
		where := fmt.Sprintf("%s %s load %d request %d", f.RunID, f.Mode, f.Load, f.Hop)
		if !f.ConnectMS.Valid || f.ConnectMS.Value < rtt-boundSlack {
			errs = append(errs, fmt.Errorf("%s: connect %v ms on a new connection, under the path's round trip %g ms", where, f.ConnectMS, rtt))
		}
		if b := rtt + f.DNSDelayMS + f.DNSAAAADelayMS; f.DNS == DNSCold && (!f.DNSMS.Valid || f.DNSMS.Value < b-boundSlack) && f.Role != RoleSubresource {
			// A sub-resource's connection may join a lookup under way.
			errs = append(errs, fmt.Errorf("%s: cold lookup %v ms, under a round trip and the resolver's delay %g ms", where, f.DNSMS, b))
		}
		if dnsOn(f.Settings) && f.ConnectMS.Valid {
			errs = append(errs, checkFamily(where, f.Settings, f.Family, f.ConnectMS.Value, rtt)...)
		}
	}
	return errs
}

// checkRequests checks the ok requests of the gap conditions against
// what their configuration makes certain whatever the machine:
//
//   - a new connection's connect takes at least a round trip, and a cold
//     lookup (its A and AAAA queries at once, both answered) at least a
//     round trip and the resolver's delay (and AAAA's further delay with
//     aaaa-late);
//   - with DNS, a new connection goes over the family the AAAA answer
//     leaves it: IPv6 with a+aaaa and aaaa-late (preferred), IPv4 with a
//     (AAAA empty) and with aaaa-blackhole (its IPv6 address never
//     answers);
//   - with aaaa-blackhole its connect takes at least FallbackDelay and a
//     round trip: the IPv6 attempt runs alone that long before IPv4's
//     handshake starts.
//
// It returns what failed, one error each.
func checkRequests(reqs []Request) []error {
	var errs []error
	for i := range reqs {
		r := &reqs[i]
		if !okRequest(*r) || !r.NewConn {
			continue
		}
		where := fmt.Sprintf("%s %s request %d", r.RunID, r.Mode, r.Seq)
		rtt := r.DelayUpMS + r.DelayDownMS
		if r.ConnectMS != r.ConnectMS || r.ConnectMS < rtt-boundSlack {
			errs = append(errs, fmt.Errorf("%s: connect %.3f ms on a new connection, under the path's round trip %g ms", where, r.ConnectMS, rtt))
		}
		if !dnsOn(r.Settings) {
			continue
		}
		if b := rtt + r.DNSDelayMS + r.DNSAAAADelayMS; r.DNS == DNSCold && (!r.DNSMS.Valid || r.DNSMS.Value < b-boundSlack) {
			errs = append(errs, fmt.Errorf("%s: cold lookup %v ms, under a round trip and the resolver's delay %g ms", where, r.DNSMS, b))
		}
		errs = append(errs, checkFamily(where, r.Settings, r.Family, r.ConnectMS, rtt)...)
	}
	return errs
}

// checkFamily checks a new connection made after a lookup: it went over
// the family its AAAA answer leaves it (IPv6 with a+aaaa and aaaa-late,
// else IPv4),
// and past a blackholed AAAA its connect took at least FallbackDelay and
// a round trip.
func checkFamily(where string, s Settings, family string, connectMS, rtt float64) []error {
	var errs []error
	want := FamilyIPv4
	if s.DNSFamilies == FamiliesBoth || s.DNSFamilies == FamiliesLate {
		want = FamilyIPv6
	}
	if family != want {
		errs = append(errs, fmt.Errorf("%s: connected over %q with dns families %s: want %s", where, family, s.DNSFamilies, want))
	}
	if b := ms(FallbackDelay) + rtt; s.DNSFamilies == FamiliesBlackhole && connectMS < b-boundSlack {
		errs = append(errs, fmt.Errorf("%s: connect %.3f ms past an unanswered IPv6 address, under the fallback delay and a round trip %g ms", where, connectMS, b))
	}
	return errs
}
