package latencygap

import (
	"errors"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the load conditions (redirect chains and pages).
const (
	fetchFile = "gap-page-requests.csv"
	loadFile  = "gap-page-loads.csv"
	pageFile  = "gap-pages.csv"
)

// LoadKey is what every row of a load condition says of it.
type LoadKey struct {
	RunID           string  `csv:"run_id"`
	Kind            string  `csv:"kind"`     // KindRedirect or KindPage
	Mode            string  `csv:"mode"`     // ModeKeepAlive (a first visit: connections reused within the load) or ModeNew (one per request)
	Protocol        string  `csv:"protocol"` // ProtoHTTP1 or ProtoHTTP2
	Redirects       int     `csv:"redirects"`
	RedirectOrigin  string  `csv:"redirect_origin"` // OriginSame, OriginCross; "" for a page
	Resources       int     `csv:"resources"`       // a page's sub-resources
	SizeBytes       int     `csv:"size_bytes"`      // each resource's body
	ConfiguredRTTMS float64 `csv:"configured_rtt_ms,millis"`
}

// Roles of a request in a load (Fetch.Role).
const (
	RoleHop         = "redirect"
	RoleResource    = "resource" // at the end of a chain
	RoleDocument    = "document" // a page's HTML
	RoleSubresource = "subresource"
)

// Fetch is one HTTP request of a load (gap-page-requests.csv). Times are
// in ms: StartMS and EndMS (its last body byte) from the load's start;
// DNSMS, ConnectMS and TLSMS what its new connection spent on each (empty
// on a reused connection, or without DNS or TLS); WaitMS from its start
// until it had a connection, beyond those; TTFBMS and TotalMS from its
// start. ServerMS is the server's Server-Timing header, ServerLastByteMS
// its trailer (timed through the last byte written).
type Fetch struct {
	LoadKey
	Load             int            `csv:"load"` // the load's sequence number in its mode
	Hop              int            `csv:"hop"`  // a chain's hops 0 to redirects (the resource), a page's document 0 and sub-resources 1 to N
	Role             string         `csv:"role"`
	Origin           int            `csv:"origin"` // 1: the server's, 2...: the others
	Status           int            `csv:"status"`
	Proto            string         `csv:"proto"` // the response's protocol (HTTP/1.1, HTTP/2.0)
	NewConn          bool           `csv:"new_conn"`
	StartMS          float64        `csv:"start_ms,millis"`
	DNSMS            recorder.Maybe `csv:"dns_ms,millis"`
	ConnectMS        recorder.Maybe `csv:"connect_ms,millis"`
	TLSMS            recorder.Maybe `csv:"tls_ms,millis"`
	WaitMS           recorder.Maybe `csv:"wait_ms,millis"`
	TTFBMS           recorder.Maybe `csv:"ttfb_ms,millis"`
	TotalMS          float64        `csv:"total_ms,millis"`
	EndMS            float64        `csv:"end_ms,millis"`
	ServerMS         recorder.Maybe `csv:"server_ms,millis"`
	ServerLastByteMS recorder.Maybe `csv:"server_last_byte_ms,millis"`
	Bytes            int64          `csv:"bytes"`
	Error            string         `csv:"error"`
	Settings
	// Family is what its new connection went over after a lookup
	// (FamilyIPv4, FamilyIPv6; empty otherwise).
	Family string `csv:"family,added="`
}

func (Fetch) Schema() *recorder.Schema[Fetch] { return fetchSchema }

var fetchSchema = recorder.Tagged[Fetch](fetchFile)

// Load is one load (gap-page-loads.csv), summarizeLoad's: a redirect
// chain to its resource, or a page's document and sub-resources.
// VisibleMaxPct is what a server's slowest request says of the page.
type Load struct {
	LoadKey
	Load          int            `csv:"load"`
	Requests      int            `csv:"requests"`
	Connections   int            `csv:"connections"`
	LoadMS        float64        `csv:"load_ms,millis"`
	ServerSumMS   recorder.Maybe `csv:"server_sum_ms,millis"`
	ServerMaxMS   recorder.Maybe `csv:"server_max_ms,millis"`
	VisiblePct    recorder.Maybe `csv:"visible_pct,milli"`
	VisibleMaxPct recorder.Maybe `csv:"visible_max_pct,milli"`
	BoundMS       float64        `csv:"bound_ms,millis"`
	Error         string         `csv:"error"`
	Settings
}

func (Load) Schema() *recorder.Schema[Load] { return loadSchema }

var loadSchema = recorder.Tagged[Load](loadFile)

// Page is one load condition in one mode (gap-pages.csv): medians over
// its ok loads (Loads of them) of Load's figures, and how faithful its
// path was over the condition (both modes): the TUN delay line's p99
// and largest lateness (empty for other methods), and Valid, false when
// that p99 exceeded netem.MaxP99Lateness (the loads were then slower
// than their path: measured again up to tries times, the last kept).
type Page struct {
	LoadKey
	DelayMethod   string         `csv:"delay_method"`
	LatenessP99MS recorder.Maybe `csv:"lateness_p99_ms,millis"`
	LatenessMaxMS recorder.Maybe `csv:"lateness_max_ms,millis"`
	Valid         bool           `csv:"valid"`
	Loads         int            `csv:"loads"`
	LoadMS        recorder.Maybe `csv:"load_ms,millis"`
	ServerSumMS   recorder.Maybe `csv:"server_sum_ms,millis"`
	ServerMaxMS   recorder.Maybe `csv:"server_max_ms,millis"`
	VisiblePct    recorder.Maybe `csv:"visible_pct,milli"`
	VisibleMaxPct recorder.Maybe `csv:"visible_max_pct,milli"`
	Connections   recorder.Maybe `csv:"connections,1"`
	BoundMS       float64        `csv:"bound_ms,millis"`
	Settings
}

func (Page) Schema() *recorder.Schema[Page] { return pageSchema }

var pageSchema = recorder.Tagged[Page](pageFile)

// summarizeLoad computes a load's row from its requests. LoadMS is from
// its first request's start to the last byte of its last response;
// ServerSumMS and ServerMaxMS the sum and the largest of what the server
// reported of each of its requests (through the last byte), and
// VisiblePct = 100 * ServerSumMS / LoadMS the share of the load the
// server's timings account for (VisibleMaxPct by the largest).
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
		st := f.ServerMS
		if f.ServerLastByteMS.Valid { // through its last byte, where the server sent that
			st = f.ServerLastByteMS
		}
		if st.Valid {
			sum, hi, servers = sum+st.Value, max(hi, st.Value), servers+1
		}
		if err == nil && f.Error != "" {
			err = errors.New(f.Error)
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
		sum, hi = recorder.AppendValid(sum, l.ServerSumMS), recorder.AppendValid(hi, l.ServerMaxMS)
		vis, visMax = recorder.AppendValid(vis, l.VisiblePct), recorder.AppendValid(visMax, l.VisibleMaxPct)
	}
	p.Loads = len(ms)
	p.LoadMS, p.ServerSumMS, p.ServerMaxMS = medianOf(ms), medianOf(sum), medianOf(hi)
	p.VisiblePct, p.VisibleMaxPct, p.Connections = medianOf(vis), medianOf(visMax), medianOf(conns)
	return p
}
