package latencygap

import (
	"slices"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the load conditions (redirect chains and pages).
const (
	fetchFile = "gap-page-requests.csv"
	loadFile  = "gap-page-loads.csv"
	pageFile  = "gap-pages.csv"
)

// LoadKey is what every row of a load condition says of it: its run,
// kind, mode and protocol, its redirect hops and origin or its
// sub-resources, its resources' size and its path's configured RTT.
type LoadKey struct {
	RunID           string
	Kind            string // KindRedirect or KindPage
	Mode            string // ModeKeepAlive (a first visit: connections reused within the load) or ModeNew (one per request)
	Protocol        string // ProtoHTTP1 or ProtoHTTP2
	Redirects       int
	RedirectOrigin  string // OriginSame, OriginCross; "" for a page
	Resources       int    // a page's sub-resources
	SizeBytes       int    // each resource's body
	ConfiguredRTTMS float64
}

func loadKeyCols[T any](k func(*T) *LoadKey) []recorder.Column[T] {
	return []recorder.Column[T]{
		recorder.Col("run_id", 0, func(r *T) any { return &k(r).RunID }),
		recorder.Col("kind", 0, func(r *T) any { return &k(r).Kind }),
		recorder.Col("mode", 0, func(r *T) any { return &k(r).Mode }),
		recorder.Col("protocol", 0, func(r *T) any { return &k(r).Protocol }),
		recorder.Col("redirects", 0, func(r *T) any { return &k(r).Redirects }),
		recorder.Col("redirect_origin", 0, func(r *T) any { return &k(r).RedirectOrigin }),
		recorder.Col("resources", 0, func(r *T) any { return &k(r).Resources }),
		recorder.Col("size_bytes", 0, func(r *T) any { return &k(r).SizeBytes }),
		recorder.Col("configured_rtt_ms", recorder.DecimalsMillis, func(r *T) any { return &k(r).ConfiguredRTTMS }),
	}
}

// Roles of a request in a load (Fetch.Role).
const (
	RoleHop         = "redirect"    // a redirect hop
	RoleResource    = "resource"    // the resource at the end of a chain
	RoleDocument    = "document"    // a page's HTML
	RoleSubresource = "subresource" // one the document refers to
)

// Fetch is one HTTP request of a load (gap-page-requests.csv). Hop is
// its place in the load: a chain's hops 0 to redirects (the resource), a
// page's document 0 and its sub-resources 1 to N. Origin numbers the
// origin it went to (1: the server's, 2...: the others). Times are in ms:
// StartMS and EndMS (its last body byte) from the load's start; DNSMS,
// ConnectMS and TLSMS what its new connection spent looking the name up,
// connecting and in the TLS handshake (empty on a reused connection, or
// without DNS or TLS); WaitMS from its start until it had a connection,
// beyond those (waiting for one of the origin's connections); TTFBMS and
// TotalMS from its start to its first response byte and its last body
// byte. ServerMS is the server's Server-Timing header, ServerLastByteMS
// its trailer (timed through the last byte written).
type Fetch struct {
	LoadKey
	Load      int // the load's sequence number in its mode
	Hop       int
	Role      string
	Origin    int
	Status    int
	Proto     string // the response's protocol (HTTP/1.1, HTTP/2.0)
	NewConn   bool
	StartMS   float64
	DNSMS     recorder.Maybe
	ConnectMS recorder.Maybe
	TLSMS     recorder.Maybe
	WaitMS    recorder.Maybe
	TTFBMS    recorder.Maybe
	TotalMS   float64
	// Family is what its new connection went over after a lookup
	// (FamilyIPv4, FamilyIPv6; empty otherwise).
	Family           string
	EndMS            float64
	ServerMS         recorder.Maybe
	ServerLastByteMS recorder.Maybe
	Bytes            int64
	Error            string
	Settings
}

func (Fetch) Schema() *recorder.Schema[Fetch] { return fetchSchema }

var fetchSchema = recorder.NewSchema(fetchFile, slices.Concat(
	loadKeyCols(func(r *Fetch) *LoadKey { return &r.LoadKey }),
	[]recorder.Column[Fetch]{
		recorder.Col("load", 0, func(r *Fetch) any { return &r.Load }),
		recorder.Col("hop", 0, func(r *Fetch) any { return &r.Hop }),
		recorder.Col("role", 0, func(r *Fetch) any { return &r.Role }),
		recorder.Col("origin", 0, func(r *Fetch) any { return &r.Origin }),
		recorder.Col("status", 0, func(r *Fetch) any { return &r.Status }),
		recorder.Col("proto", 0, func(r *Fetch) any { return &r.Proto }),
		recorder.Col("new_conn", 0, func(r *Fetch) any { return &r.NewConn }),
		recorder.Col("start_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.StartMS }),
		recorder.Col("dns_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.DNSMS }),
		recorder.Col("connect_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.ConnectMS }),
		recorder.Col("tls_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.TLSMS }),
		recorder.Col("wait_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.WaitMS }),
		recorder.Col("ttfb_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.TTFBMS }),
		recorder.Col("total_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.TotalMS }),
		recorder.Col("end_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.EndMS }),
		recorder.Col("server_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.ServerMS }),
		recorder.Col("server_last_byte_ms", recorder.DecimalsMillis, func(r *Fetch) any { return &r.ServerLastByteMS }),
		recorder.Col("bytes", 0, func(r *Fetch) any { return &r.Bytes }),
		recorder.Col("error", 0, func(r *Fetch) any { return &r.Error }),
	},
	settingsCols(func(r *Fetch) *Settings { return &r.Settings }),
	dnsCols(func(r *Fetch) *Settings { return &r.Settings }),
	[]recorder.Column[Fetch]{
		recorder.Col("family", 0, func(r *Fetch) any { return &r.Family }).Added(""),
	},
)...)

// serverTime is what the server reported of a request: through its last
// byte (the trailer) where it sent that, else its header.
func (f *Fetch) serverTime() recorder.Maybe {
	if f.ServerLastByteMS.Valid {
		return f.ServerLastByteMS
	}
	return f.ServerMS
}

// Load is one load (gap-page-loads.csv): a redirect chain to its
// resource, or a page's document and sub-resources. LoadMS is from its
// first request's start to the last byte of its last response;
// ServerSumMS and ServerMaxMS the sum and the largest of what the server
// reported of each of its requests (through the last byte), and
// VisiblePct = 100 * ServerSumMS / LoadMS the share of the load the
// server's timings account for (VisibleMaxPct by the largest: what a
// server's slowest request says of the page). Connections is how many it
// opened; BoundMS its lower bound from the path (loadBound).
type Load struct {
	LoadKey
	Load          int
	Requests      int
	Connections   int
	LoadMS        float64
	ServerSumMS   recorder.Maybe
	ServerMaxMS   recorder.Maybe
	VisiblePct    recorder.Maybe
	VisibleMaxPct recorder.Maybe
	BoundMS       float64
	Error         string
	Settings
}

func (Load) Schema() *recorder.Schema[Load] { return loadSchema }

var loadSchema = recorder.NewSchema(loadFile, slices.Concat(
	loadKeyCols(func(r *Load) *LoadKey { return &r.LoadKey }),
	[]recorder.Column[Load]{
		recorder.Col("load", 0, func(r *Load) any { return &r.Load }),
		recorder.Col("requests", 0, func(r *Load) any { return &r.Requests }),
		recorder.Col("connections", 0, func(r *Load) any { return &r.Connections }),
		recorder.Col("load_ms", recorder.DecimalsMillis, func(r *Load) any { return &r.LoadMS }),
		recorder.Col("server_sum_ms", recorder.DecimalsMillis, func(r *Load) any { return &r.ServerSumMS }),
		recorder.Col("server_max_ms", recorder.DecimalsMillis, func(r *Load) any { return &r.ServerMaxMS }),
		recorder.Col("visible_pct", decimalsPct, func(r *Load) any { return &r.VisiblePct }),
		recorder.Col("visible_max_pct", decimalsPct, func(r *Load) any { return &r.VisibleMaxPct }),
		recorder.Col("bound_ms", recorder.DecimalsMillis, func(r *Load) any { return &r.BoundMS }),
		recorder.Col("error", 0, func(r *Load) any { return &r.Error }),
	},
	settingsCols(func(r *Load) *Settings { return &r.Settings }),
	dnsCols(func(r *Load) *Settings { return &r.Settings }),
)...)

// Page is one load condition in one mode (gap-pages.csv): medians over
// its ok loads (Loads of them) of Load's figures, and how faithful its
// path was over the condition (both modes): the TUN delay line's p99
// and largest lateness (empty for other methods), and Valid, false when
// that p99 exceeded netem.MaxP99Lateness (the loads were then slower
// than their path: measured again up to tries times, the last kept).
type Page struct {
	LoadKey
	DelayMethod                  string
	LatenessP99MS, LatenessMaxMS recorder.Maybe
	Valid                        bool
	Loads                        int
	LoadMS                       recorder.Maybe
	ServerSumMS                  recorder.Maybe
	ServerMaxMS                  recorder.Maybe
	VisiblePct                   recorder.Maybe
	VisibleMaxPct                recorder.Maybe
	Connections                  recorder.Maybe
	BoundMS                      float64
	Settings
}

func (Page) Schema() *recorder.Schema[Page] { return pageSchema }

var pageSchema = recorder.NewSchema(pageFile, slices.Concat(
	loadKeyCols(func(r *Page) *LoadKey { return &r.LoadKey }),
	[]recorder.Column[Page]{
		recorder.Col("delay_method", 0, func(r *Page) any { return &r.DelayMethod }),
		recorder.Col("lateness_p99_ms", recorder.DecimalsMillis, func(r *Page) any { return &r.LatenessP99MS }),
		recorder.Col("lateness_max_ms", recorder.DecimalsMillis, func(r *Page) any { return &r.LatenessMaxMS }),
		recorder.Col("valid", 0, func(r *Page) any { return &r.Valid }),
		recorder.Col("loads", 0, func(r *Page) any { return &r.Loads }),
		recorder.Col("load_ms", recorder.DecimalsMillis, func(r *Page) any { return &r.LoadMS }),
		recorder.Col("server_sum_ms", recorder.DecimalsMillis, func(r *Page) any { return &r.ServerSumMS }),
		recorder.Col("server_max_ms", recorder.DecimalsMillis, func(r *Page) any { return &r.ServerMaxMS }),
		recorder.Col("visible_pct", decimalsPct, func(r *Page) any { return &r.VisiblePct }),
		recorder.Col("visible_max_pct", decimalsPct, func(r *Page) any { return &r.VisibleMaxPct }),
		recorder.Col("connections", 1, func(r *Page) any { return &r.Connections }),
		recorder.Col("bound_ms", recorder.DecimalsMillis, func(r *Page) any { return &r.BoundMS }),
	},
	settingsCols(func(r *Page) *Settings { return &r.Settings }),
	dnsCols(func(r *Page) *Settings { return &r.Settings }),
)...)

// summarizeLoad computes a load's row from its requests.
func summarizeLoad(k LoadKey, seq int, s Settings, bound float64, fetches []Fetch, err error) Load {
	l := Load{LoadKey: k, Load: seq, Requests: len(fetches), BoundMS: bound, Settings: s}
	var sum, hi float64
	servers := 0
	for i := range fetches {
		f := &fetches[i]
		if f.NewConn {
			l.Connections++
		}
		l.LoadMS = max(l.LoadMS, f.EndMS)
		if st := f.serverTime(); st.Valid {
			sum, hi, servers = sum+st.Value, max(hi, st.Value), servers+1
		}
		if err == nil && f.Error != "" {
			err = errorString(f.Error)
		}
	}
	if servers > 0 {
		l.ServerSumMS, l.ServerMaxMS = recorder.Some(sum), recorder.Some(hi)
		if l.LoadMS > 0 {
			l.VisiblePct, l.VisibleMaxPct = recorder.Some(100*sum/l.LoadMS), recorder.Some(100*hi/l.LoadMS)
		}
	}
	if err != nil {
		l.Error = err.Error()
	}
	return l
}

type errorString string

func (e errorString) Error() string { return string(e) }

// SummarizeLoads computes a load condition's gap-pages.csv row in one
// mode from its loads (the key's mode): medians over the ok ones.
func SummarizeLoads(k LoadKey, s Settings, bound float64, loads []Load) Page {
	p := Page{LoadKey: k, BoundMS: bound, Settings: s}
	var ms, sum, hi, vis, visMax, conns []float64
	for _, l := range loads {
		if l.Error != "" || l.Mode != k.Mode {
			continue
		}
		ms, conns = append(ms, l.LoadMS), append(conns, float64(l.Connections))
		if l.ServerSumMS.Valid {
			sum, hi = append(sum, l.ServerSumMS.Value), append(hi, l.ServerMaxMS.Value)
		}
		if l.VisiblePct.Valid {
			vis, visMax = append(vis, l.VisiblePct.Value), append(visMax, l.VisibleMaxPct.Value)
		}
	}
	p.Loads = len(ms)
	med := func(x []float64) recorder.Maybe { return recorder.Some(recorder.Median(x)) }
	p.LoadMS, p.ServerSumMS, p.ServerMaxMS, p.VisiblePct, p.VisibleMaxPct, p.Connections = med(ms), med(sum), med(hi), med(vis), med(visMax), med(conns)
	return p
}
