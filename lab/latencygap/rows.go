package latencygap

import "github.com/slowlab/slowlab/recorder"

// The results files of the rows this package declares.
const (
	gapFile     = "gap.csv"
	requestFile = "gap-requests.csv"
	pathFile    = "gap-path.csv"
	runFile     = "gap-runs.csv"
)

// Settings are a condition's settings beyond its response size and
// symmetric delay, in every results file's rows after the columns of
// before.
type Settings struct {
	TLS         string  `csv:"tls"`                  // TLSNone, TLS12, TLS13, TLS13Resume
	LossPct     float64 `csv:"loss_pct,milli"`       // the random loss asked of the path, percent, each direction
	RateBits    int64   `csv:"rate"`                 // the path's rate limit, bits per second, each direction; 0 for none
	DelayUpMS   float64 `csv:"delay_up_ms,millis"`   // the one-way delays added client to server and back:
	DelayDownMS float64 `csv:"delay_down_ms,millis"` // their sum is the configured RTT
	WorkMS      float64 `csv:"work_ms,millis"`       // the server's processing time per request (/bytes?work=)
	WorkKind    string  `csv:"work_kind"`            // how it spends it: WorkSleep or WorkCPU
	// DNS is how the client finds the server (DNSModes; "" in rows of
	// before: none), DNSDelayMS the lab resolver's delay before it
	// answers, DNSFamilies what it answered for AAAA (DNSFamilyModes; ""
	// without DNS, and in rows of before: a) and DNSAAAADelayMS how much
	// later than A (aaaa-late).
	DNS            string  `csv:"dns"`
	DNSDelayMS     float64 `csv:"dns_delay_ms,millis"`
	DNSFamilies    string  `csv:"dns_families,added="`
	DNSAAAADelayMS float64 `csv:"dns_aaaa_delay_ms,millis,added=0"`
}

// TLS modes of a condition (Settings.TLS).
const (
	TLSNone     = "none"
	TLS12       = "1.2"
	TLS13       = "1.3"
	TLS13Resume = "1.3-resume" // TLS 1.3, new connections resume the previous session (no 0-RTT)
)

// TLSModes lists the TLS modes.
var TLSModes = []string{TLSNone, TLS12, TLS13, TLS13Resume}

// Kinds of server work (Settings.WorkKind).
const (
	WorkSleep = "sleep" // waits: an I/O-bound handler
	WorkCPU   = "cpu"   // spins: a CPU-bound handler
)

// Gap is one condition of the experiment (gap.csv): what the server
// reported against what the client waited (SummarizeRun), for one
// response size and added round-trip time.
type Gap struct {
	SizeBytes         int            `csv:"size_bytes"`
	ConfiguredRTTMS   float64        `csv:"configured_rtt_ms,millis"`
	RTTMS             recorder.Maybe `csv:"rtt_ms,millis"`
	ServerMS          recorder.Maybe `csv:"server_ms,millis"` // its Server-Timing header: what a server-side dashboard sees
	ClientKeepaliveMS recorder.Maybe `csv:"client_keepalive_ms,millis"`
	ClientNewMS       recorder.Maybe `csv:"client_new_ms,millis"`
	ServerBlindPct    recorder.Maybe `csv:"server_blind_pct,milli"`
	Runs              int            `csv:"runs"`         // ok requests per mode (the smaller of the two)
	DelayMethod       string         `csv:"delay_method"` // netem, tun or none
	// The server's figures through the last body byte written, on the
	// same requests.
	ServerLastByteMS       recorder.Maybe `csv:"server_last_byte_ms,millis"`
	ServerLastByteBlindPct recorder.Maybe `csv:"server_last_byte_blind_pct,milli"`
	Settings
	// HandshakeMS is the median TLS handshake of the new-connection
	// requests (empty without TLS); ResumedPct the share of them that
	// resumed a session.
	HandshakeMS recorder.Maybe `csv:"handshake_ms,millis"`
	ResumedPct  recorder.Maybe `csv:"resumed_pct,milli"`
	// DNSMS is the median time the new-connection requests' dials spent
	// resolving the server's name (0 when the client's cache answered;
	// empty without DNS).
	DNSMS recorder.Maybe `csv:"dns_ms,millis"`
	// ConnectMS is the median TCP connect of the new-connection requests
	// (from the first attempt: a happy-eyeballs fallback's wait included)
	// and IPv6Pct the share of them that connected over IPv6 (empty
	// without DNS, which alone says a family).
	ConnectMS recorder.Maybe `csv:"connect_ms,millis,added="`
	IPv6Pct   recorder.Maybe `csv:"ipv6_pct,milli,added="`
	// RunID is the condition's run (gap-runs.csv): resuming a session
	// keeps a row only if its run completed.
	RunID string `csv:"run_id"`
}

func (Gap) Schema() *recorder.Schema[Gap] { return gapSchema }

// The Settings columns of gap.csv, gap-requests.csv and gap-path.csv are
// split: the DNS ones came later and follow some of the row's own.
var gapSchema = recorder.TaggedSpans[Gap](gapFile,
	"SizeBytes-ServerLastByteBlindPct", "TLS-WorkKind", "HandshakeMS-ResumedPct", "DNS-DNSAAAADelayMS", "DNSMS-RunID")

// Request is one request of the experiment (gap-requests.csv).
// ConnectMS is NaN on a reused connection. ServerHeaderMS is the server's
// Server-Timing header, ServerLastByteMS its trailer (timed through the
// last body byte written). TCPRTTMS is its connection's minimum RTT as
// the kernel measured it (TCP_INFO).
type Request struct {
	SizeBytes        int            `csv:"size_bytes"`
	ConfiguredRTTMS  float64        `csv:"configured_rtt_ms,millis"`
	DelayMethod      string         `csv:"delay_method"`
	Mode             string         `csv:"mode"` // ModeKeepAlive or ModeNew
	Seq              int            `csv:"seq"`
	StartS           float64        `csv:"start_s,micros"` // since the condition started
	NewConn          bool           `csv:"new_conn"`       // a TCP connection was opened for it
	ConnectMS        float64        `csv:"connect_ms,millis"`
	TTFBMS           float64        `csv:"ttfb_ms,millis"`
	TotalMS          float64        `csv:"total_ms,millis"` // start to last body byte
	ServerHeaderMS   recorder.Maybe `csv:"server_header_ms,millis"`
	ServerLastByteMS recorder.Maybe `csv:"server_last_byte_ms,millis"`
	TCPRTTMS         recorder.Maybe `csv:"tcp_rtt_ms,millis"`
	Status           int            `csv:"status"`
	Bytes            int64          `csv:"bytes"`
	Error            string         `csv:"error"`
	Settings
	// HandshakeMS is its TLS handshake (empty without one) and TLSResumed
	// whether that resumed a session.
	HandshakeMS recorder.Maybe `csv:"handshake_ms,millis"`
	TLSResumed  bool           `csv:"tls_resumed"`
	// DNSMS is what its dial spent resolving the server's name, from
	// before the query was sent to after the answer was read: 0 when the
	// client's cache answered, empty when it did not dial (a kept-alive
	// connection) or the condition has no DNS.
	DNSMS recorder.Maybe `csv:"dns_ms,millis"`
	// Family is what its new connection went over, FamilyIPv4 or
	// FamilyIPv6, when it looked the name up (empty otherwise: without
	// DNS it is the path's IPv4).
	Family string `csv:"family,added="`
	RunID  string `csv:"run_id"` // its condition's run (gap-runs.csv)
}

// Modes of a request (Request.Mode).
const (
	ModeKeepAlive = "keepalive" // on a connection kept alive from the previous request
	ModeNew       = "new"       // on a new TCP connection, handshake included
)

func (Request) Schema() *recorder.Schema[Request] { return requestSchema }

var requestSchema = recorder.TaggedSpans[Request](requestFile,
	"SizeBytes-Error", "TLS-WorkKind", "HandshakeMS-TLSResumed", "DNS-DNSAAAADelayMS", "DNSMS-RunID")

// Path is the network path of one condition (gap-path.csv): how packets
// were delayed and, for the TUN delay line, how late it wrote them
// (actual write minus due) over the condition's packets, both
// directions. Valid is false when the path was not what the row claims
// (summarize says when).
type Path struct {
	SizeBytes         int            `csv:"size_bytes"`
	ConfiguredRTTMS   float64        `csv:"configured_rtt_ms,millis"`
	RTTMS             recorder.Maybe `csv:"rtt_ms,millis"`
	DelayMethod       string         `csv:"delay_method"`
	MTU               int            `csv:"mtu"`
	CongestionControl string         `csv:"congestion_control"`
	Packets           int            `csv:"packets"`
	Dropped           int            `csv:"dropped"`
	LatenessP50MS     recorder.Maybe `csv:"lateness_p50_ms,millis"`
	LatenessP99MS     recorder.Maybe `csv:"lateness_p99_ms,millis"`
	LatenessMaxMS     recorder.Maybe `csv:"lateness_max_ms,millis"`
	Valid             bool           `csv:"valid"`
	Settings
	// PathPackets are the packets that entered the path during the
	// condition, both directions, and LossAppliedPct the share it dropped
	// at random, both by the path's own count; empty where the path has
	// none (method none without loss).
	PathPackets    recorder.Maybe `csv:"path_packets"`
	LossAppliedPct recorder.Maybe `csv:"loss_applied_pct,milli"`
	// OverflowDrops are the packets the path dropped, by its own count,
	// because its queue was full (a rate limit's queue; not random loss,
	// not in LossAppliedPct). SentPackets and ReceivedPackets are the IP
	// packets its two ends sent into it and received from it (both
	// directions, the namespaces' own counters, not the path's), and
	// LossMeasuredPct the share of those sent that did not arrive, the
	// overflow drops left out of both: the loss compared with
	// Settings.LossPct for Valid. Empty where not counted.
	OverflowDrops   recorder.Maybe `csv:"overflow_drops"`
	SentPackets     recorder.Maybe `csv:"sent_packets"`
	ReceivedPackets recorder.Maybe `csv:"received_packets"`
	LossMeasuredPct recorder.Maybe `csv:"loss_measured_pct,milli"`
	RunID           string         `csv:"run_id"` // its condition's run (gap-runs.csv)
}

func (Path) Schema() *recorder.Schema[Path] { return pathSchema }

var pathSchema = recorder.TaggedSpans[Path](pathFile,
	"SizeBytes-Valid", "TLS-WorkKind", "PathPackets-LossMeasuredPct", "DNS-DNSAAAADelayMS", "RunID")

// RunRow is one row of gap-runs.csv: one run of the experiment (one
// condition), and how it ended. It is the file the shared run loop
// resumes from and records the host guard's aborts in; the condition's
// rows in the other files have the same run_id.
type RunRow struct {
	RunID string `csv:"run_id"`
	// recorder.RunOK, RunFailed or RunAborted, and why not ok
	Status string `csv:"status"`
	Reason string `csv:"reason"`
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.Tagged[RunRow](runFile)

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}

// okRequest reports whether r counts toward the medians.
func okRequest(r Request) bool { return r.Status >= 200 && r.Status <= 299 && r.Error == "" }

// SummarizeRun computes one condition's gap.csv row from its run's
// requests (the settings are the caller's: set Settings on the row).
// ClientKeepaliveMS is the median total of the ok keep-alive requests
// that reused a connection; ClientNewMS that of the ok new-connection
// requests, ServerMS (ServerLastByteMS) the median of the server's header
// (last-byte) timings of those same requests, ServerBlindPct = 100 * (1 -
// ServerMS / ClientNewMS). RTTMS is the median TCP RTT of every ok
// request, so a row says the delay it really had.
func SummarizeRun(sizeBytes int, configuredRTTMS float64, method string, reqs []Request) Gap {
	var ka, nw, srv, last, rtt, hs, lookups, connects []float64
	resumed, v6, families := 0, 0, 0
	for _, r := range reqs {
		if okRequest(r) {
			rtt = recorder.AppendValid(rtt, r.TCPRTTMS)
		}
		switch {
		case !okRequest(r):
		case r.Mode == ModeKeepAlive && !r.NewConn:
			ka = append(ka, r.TotalMS)
		case r.Mode == ModeNew && r.NewConn:
			nw = append(nw, r.TotalMS)
			srv = recorder.AppendValid(srv, r.ServerHeaderMS)
			last = recorder.AppendValid(last, r.ServerLastByteMS)
			lookups = recorder.AppendValid(lookups, r.DNSMS)
			hs = recorder.AppendValid(hs, r.HandshakeMS)
			if r.ConnectMS > 0 { // NaN: none
				connects = append(connects, r.ConnectMS)
			}
			if r.Family != "" {
				families++
				if r.Family == FamilyIPv6 {
					v6++
				}
			}
			if r.HandshakeMS.Valid && r.TLSResumed {
				resumed++
			}
		}
	}
	// A share of nothing is NaN, which Some leaves empty.
	g := Gap{SizeBytes: sizeBytes, ConfiguredRTTMS: configuredRTTMS, RTTMS: medianOf(rtt), DelayMethod: method,
		Runs: min(len(ka), len(nw)), ServerMS: medianOf(srv), ServerLastByteMS: medianOf(last), ClientKeepaliveMS: medianOf(ka), ClientNewMS: medianOf(nw),
		HandshakeMS: medianOf(hs), ResumedPct: recorder.Some(100 * float64(resumed) / float64(len(hs))), DNSMS: medianOf(lookups),
		ConnectMS: medianOf(connects), IPv6Pct: recorder.Some(100 * float64(v6) / float64(families))}
	g.ServerBlindPct = blindPct(g.ServerMS, g.ClientNewMS)
	g.ServerLastByteBlindPct = blindPct(g.ServerLastByteMS, g.ClientNewMS)
	return g
}

// medianOf is the median of xs, empty when there are none.
func medianOf(xs []float64) recorder.Maybe { return recorder.Some(recorder.Median(xs)) }

// blindPct is the share of the client's time the server did not see,
// 100 * (1 - server / client), empty unless both were measured.
func blindPct(server, client recorder.Maybe) recorder.Maybe {
	if !server.Valid || !client.Valid || client.Value <= 0 {
		return recorder.Maybe{}
	}
	return recorder.Some(100 * (1 - server.Value/client.Value))
}
