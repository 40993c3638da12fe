package latencygap

import (
	"slices"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	gapFile     = "gap.csv"
	requestFile = "gap-requests.csv"
	pathFile    = "gap-path.csv"
	runFile     = "gap-runs.csv"
)

// decimalsPct is the precision of the percentage columns: a thousandth
// of a percent.
const decimalsPct = 3

// Settings are a condition's settings beyond its response size and
// symmetric delay, in gap.csv, gap-requests.csv and gap-path.csv after
// the columns of before: the TLS mode, the path's random loss, rate and
// one-way delays, and the server's processing time per request.
type Settings struct {
	TLS string // TLSNone, TLS12, TLS13, TLS13Resume
	// LossPct is the random loss the path was asked for, in percent, each
	// direction.
	LossPct float64
	// RateBits is the path's rate limit in bits per second, each
	// direction; 0 for none.
	RateBits int64
	// DelayUpMS and DelayDownMS are the one-way delays added client to
	// server and back; their sum is the configured RTT.
	DelayUpMS, DelayDownMS float64
	WorkMS                 float64 // the server's processing time per request (/bytes?work=)
	WorkKind               string  // how it spends it: WorkSleep or WorkCPU
	// DNS is how the client finds the server (DNSNone, DNSCold,
	// DNSCached; "" in rows of before, none) and DNSDelayMS the lab
	// resolver's delay before it answers.
	DNS        string
	DNSDelayMS float64
	// DNSFamilies is what the resolver answered for AAAA
	// (DNSFamilyModes; "" without DNS, and in rows of before: a), and
	// DNSAAAADelayMS how much later than A it answered AAAA (aaaa-late).
	DNSFamilies    string
	DNSAAAADelayMS float64
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

// settingsCols are the Settings columns of a row type that embeds it.
func settingsCols[T any](s func(*T) *Settings) []recorder.Column[T] {
	return []recorder.Column[T]{
		recorder.Col("tls", 0, func(r *T) any { return &s(r).TLS }),
		recorder.Col("loss_pct", decimalsPct, func(r *T) any { return &s(r).LossPct }),
		recorder.Col("rate", 0, func(r *T) any { return &s(r).RateBits }),
		recorder.Col("delay_up_ms", recorder.DecimalsMillis, func(r *T) any { return &s(r).DelayUpMS }),
		recorder.Col("delay_down_ms", recorder.DecimalsMillis, func(r *T) any { return &s(r).DelayDownMS }),
		recorder.Col("work_ms", recorder.DecimalsMillis, func(r *T) any { return &s(r).WorkMS }),
		recorder.Col("work_kind", 0, func(r *T) any { return &s(r).WorkKind }),
	}
}

// dnsCols are the Settings columns of the DNS mode, at the end of each
// file (before run_id) where they came after the others.
func dnsCols[T any](s func(*T) *Settings) []recorder.Column[T] {
	return []recorder.Column[T]{
		recorder.Col("dns", 0, func(r *T) any { return &s(r).DNS }),
		recorder.Col("dns_delay_ms", recorder.DecimalsMillis, func(r *T) any { return &s(r).DNSDelayMS }),
		recorder.Col("dns_families", 0, func(r *T) any { return &s(r).DNSFamilies }).Added(""),
		recorder.Col("dns_aaaa_delay_ms", recorder.DecimalsMillis, func(r *T) any { return &s(r).DNSAAAADelayMS }).Added("0"),
	}
}

// Gap is one condition of the experiment (gap.csv): what the server
// reported against what the client waited, for one response size and
// added round-trip time. Times are medians over the condition's ok
// requests. ServerMS is what the server reported in its Server-Timing
// header (what a server-side dashboard sees), ServerBlindPct = 100 * (1 -
// ServerMS / ClientNewMS); ServerLastByteMS and ServerLastByteBlindPct
// are the same for the server's timing through the last byte written.
// ConfiguredRTTMS is the round-trip time the path was asked to add (twice
// the one-way delay); RTTMS is what the kernel measured on the
// condition's connections (TCP_INFO minimum RTT, median over the ok
// requests), so a row says the delay it really had.
type Gap struct {
	SizeBytes         int
	ConfiguredRTTMS   float64
	RTTMS             recorder.Maybe
	ServerMS          recorder.Maybe // server-reported (header), on the new-connection requests
	ClientKeepaliveMS recorder.Maybe
	ClientNewMS       recorder.Maybe
	ServerBlindPct    recorder.Maybe
	Runs              int    // ok requests per mode (the smaller of the two)
	DelayMethod       string // netem, tun or none
	// The server's figures through the last body byte written, on the
	// same requests.
	ServerLastByteMS, ServerLastByteBlindPct recorder.Maybe
	Settings
	// HandshakeMS is the median TLS handshake of the new-connection
	// requests (empty without TLS); ResumedPct the share of them that
	// resumed a session.
	HandshakeMS, ResumedPct recorder.Maybe
	// DNSMS is the median time the new-connection requests' dials spent
	// resolving the server's name (0 when the client's cache answered;
	// empty without DNS).
	DNSMS recorder.Maybe
	// ConnectMS is the median TCP connect of the new-connection requests
	// (from the first attempt: a happy-eyeballs fallback's wait included)
	// and IPv6Pct the share of them that connected over IPv6 (empty
	// without DNS, which alone says a family).
	ConnectMS, IPv6Pct recorder.Maybe
	// RunID is the condition's run (gap-runs.csv): resuming a session
	// keeps a row only if its run completed.
	RunID string
}

func (Gap) Schema() *recorder.Schema[Gap] { return gapSchema }

var gapSchema = recorder.NewSchema(gapFile, slices.Concat(
	[]recorder.Column[Gap]{
		recorder.Col("size_bytes", 0, func(r *Gap) any { return &r.SizeBytes }),
		recorder.Col("configured_rtt_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.ConfiguredRTTMS }),
		recorder.Col("rtt_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.RTTMS }),
		recorder.Col("server_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.ServerMS }),
		recorder.Col("client_keepalive_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.ClientKeepaliveMS }),
		recorder.Col("client_new_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.ClientNewMS }),
		recorder.Col("server_blind_pct", decimalsPct, func(r *Gap) any { return &r.ServerBlindPct }),
		recorder.Col("runs", 0, func(r *Gap) any { return &r.Runs }),
		recorder.Col("delay_method", 0, func(r *Gap) any { return &r.DelayMethod }),
		recorder.Col("server_last_byte_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.ServerLastByteMS }),
		recorder.Col("server_last_byte_blind_pct", decimalsPct, func(r *Gap) any { return &r.ServerLastByteBlindPct }),
	},
	settingsCols(func(r *Gap) *Settings { return &r.Settings }),
	[]recorder.Column[Gap]{
		recorder.Col("handshake_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.HandshakeMS }),
		recorder.Col("resumed_pct", decimalsPct, func(r *Gap) any { return &r.ResumedPct }),
	},
	dnsCols(func(r *Gap) *Settings { return &r.Settings }),
	[]recorder.Column[Gap]{
		recorder.Col("dns_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.DNSMS }),
		recorder.Col("connect_ms", recorder.DecimalsMillis, func(r *Gap) any { return &r.ConnectMS }).Added(""),
		recorder.Col("ipv6_pct", decimalsPct, func(r *Gap) any { return &r.IPv6Pct }).Added(""),
		recorder.Col("run_id", 0, func(r *Gap) any { return &r.RunID }),
	},
)...)

// Request is one request of the experiment (gap-requests.csv).
// ConnectMS is NaN on a reused connection. ServerHeaderMS is the server's
// Server-Timing header, measured when the header was written (what a
// server-side dashboard sees); ServerLastByteMS what it reported for its
// processing through the last body byte written (a Server-Timing
// trailer). TCPRTTMS is its connection's minimum RTT as the kernel
// measured it (TCP_INFO), and ConfiguredRTTMS the round-trip time the
// path was asked to add.
type Request struct {
	SizeBytes        int
	ConfiguredRTTMS  float64
	DelayMethod      string
	Mode             string // ModeKeepAlive or ModeNew
	Seq              int
	StartS           float64 // since the condition started
	NewConn          bool    // a TCP connection was opened for it
	ConnectMS        float64
	TTFBMS           float64
	TotalMS          float64 // start to last body byte
	ServerHeaderMS   recorder.Maybe
	ServerLastByteMS recorder.Maybe
	TCPRTTMS         recorder.Maybe
	Status           int
	Bytes            int64
	Error            string
	Settings
	// HandshakeMS is its TLS handshake (empty without one) and TLSResumed
	// whether that resumed a session.
	HandshakeMS recorder.Maybe
	TLSResumed  bool
	// DNSMS is what its dial spent resolving the server's name, from
	// before the query was sent to after the answer was read: 0 when the
	// client's cache answered, empty when it did not dial (a kept-alive
	// connection) or the condition has no DNS.
	DNSMS recorder.Maybe
	// Family is what its new connection went over, FamilyIPv4 or
	// FamilyIPv6, when it looked the name up (empty otherwise: without
	// DNS it is the path's IPv4).
	Family string
	RunID  string // its condition's run (gap-runs.csv)
}

// Modes of a request (Request.Mode).
const (
	ModeKeepAlive = "keepalive" // on a connection kept alive from the previous request
	ModeNew       = "new"       // on a new TCP connection, handshake included
)

func (Request) Schema() *recorder.Schema[Request] { return requestSchema }

var requestSchema = recorder.NewSchema(requestFile, slices.Concat(
	[]recorder.Column[Request]{
		recorder.Col("size_bytes", 0, func(r *Request) any { return &r.SizeBytes }),
		recorder.Col("configured_rtt_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.ConfiguredRTTMS }),
		recorder.Col("delay_method", 0, func(r *Request) any { return &r.DelayMethod }),
		recorder.Col("mode", 0, func(r *Request) any { return &r.Mode }),
		recorder.Col("seq", 0, func(r *Request) any { return &r.Seq }),
		recorder.Col("start_s", recorder.DecimalsMicros, func(r *Request) any { return &r.StartS }),
		recorder.Col("new_conn", 0, func(r *Request) any { return &r.NewConn }),
		recorder.Col("connect_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.ConnectMS }),
		recorder.Col("ttfb_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.TTFBMS }),
		recorder.Col("total_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.TotalMS }),
		recorder.Col("server_header_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.ServerHeaderMS }),
		recorder.Col("server_last_byte_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.ServerLastByteMS }),
		recorder.Col("tcp_rtt_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.TCPRTTMS }),
		recorder.Col("status", 0, func(r *Request) any { return &r.Status }),
		recorder.Col("bytes", 0, func(r *Request) any { return &r.Bytes }),
		recorder.Col("error", 0, func(r *Request) any { return &r.Error }),
	},
	settingsCols(func(r *Request) *Settings { return &r.Settings }),
	[]recorder.Column[Request]{
		recorder.Col("handshake_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.HandshakeMS }),
		recorder.Col("tls_resumed", 0, func(r *Request) any { return &r.TLSResumed }),
	},
	dnsCols(func(r *Request) *Settings { return &r.Settings }),
	[]recorder.Column[Request]{
		recorder.Col("dns_ms", recorder.DecimalsMillis, func(r *Request) any { return &r.DNSMS }),
		recorder.Col("family", 0, func(r *Request) any { return &r.Family }).Added(""),
		recorder.Col("run_id", 0, func(r *Request) any { return &r.RunID }),
	},
)...)

// Path is the network path of one condition (gap-path.csv): how packets
// were delayed and, for the TUN delay line, how late it wrote them
// (actual write minus due) over the condition's packets, both
// directions; the round-trip time it was asked to add and the one the
// kernel measured on the condition's connections. Valid is false when the
// measured RTT is more than 1 ms from the configured one, the TUN delay
// line's p99 lateness exceeded 1 ms, or the loss measured at the path's
// ends (LossMeasuredPct) does not agree with the asked one within the
// binomial's bound for its packets: the path was not what the row claims.
type Path struct {
	SizeBytes                                   int
	ConfiguredRTTMS                             float64
	RTTMS                                       recorder.Maybe
	DelayMethod                                 string
	MTU                                         int
	CongestionControl                           string
	Packets, Dropped                            int
	LatenessP50MS, LatenessP99MS, LatenessMaxMS recorder.Maybe
	Valid                                       bool
	Settings
	// PathPackets are the packets that entered the path during the
	// condition, both directions, and LossAppliedPct the share it dropped
	// at random, both by the path's own count; empty where the path has
	// none (method none without loss).
	PathPackets    recorder.Maybe
	LossAppliedPct recorder.Maybe
	// OverflowDrops are the packets the path dropped, by its own count,
	// because its queue was full (a rate limit's queue; not random loss,
	// not in LossAppliedPct). SentPackets and ReceivedPackets are the IP
	// packets its two ends sent into it and received from it (both
	// directions, the namespaces' own counters, not the path's), and
	// LossMeasuredPct the share of those sent that did not arrive, the
	// overflow drops left out of both: the loss compared with
	// Settings.LossPct for Valid. Empty where not counted.
	OverflowDrops   recorder.Maybe
	SentPackets     recorder.Maybe
	ReceivedPackets recorder.Maybe
	LossMeasuredPct recorder.Maybe
	RunID           string // its condition's run (gap-runs.csv)
}

func (Path) Schema() *recorder.Schema[Path] { return pathSchema }

var pathSchema = recorder.NewSchema(pathFile, slices.Concat(
	[]recorder.Column[Path]{
		recorder.Col("size_bytes", 0, func(r *Path) any { return &r.SizeBytes }),
		recorder.Col("configured_rtt_ms", recorder.DecimalsMillis, func(r *Path) any { return &r.ConfiguredRTTMS }),
		recorder.Col("rtt_ms", recorder.DecimalsMillis, func(r *Path) any { return &r.RTTMS }),
		recorder.Col("delay_method", 0, func(r *Path) any { return &r.DelayMethod }),
		recorder.Col("mtu", 0, func(r *Path) any { return &r.MTU }),
		recorder.Col("congestion_control", 0, func(r *Path) any { return &r.CongestionControl }),
		recorder.Col("packets", 0, func(r *Path) any { return &r.Packets }),
		recorder.Col("dropped", 0, func(r *Path) any { return &r.Dropped }),
		recorder.Col("lateness_p50_ms", recorder.DecimalsMillis, func(r *Path) any { return &r.LatenessP50MS }),
		recorder.Col("lateness_p99_ms", recorder.DecimalsMillis, func(r *Path) any { return &r.LatenessP99MS }),
		recorder.Col("lateness_max_ms", recorder.DecimalsMillis, func(r *Path) any { return &r.LatenessMaxMS }),
		recorder.Col("valid", 0, func(r *Path) any { return &r.Valid }),
	},
	settingsCols(func(r *Path) *Settings { return &r.Settings }),
	[]recorder.Column[Path]{
		recorder.Col("path_packets", 0, func(r *Path) any { return &r.PathPackets }),
		recorder.Col("loss_applied_pct", decimalsPct, func(r *Path) any { return &r.LossAppliedPct }),
		recorder.Col("overflow_drops", 0, func(r *Path) any { return &r.OverflowDrops }),
		recorder.Col("sent_packets", 0, func(r *Path) any { return &r.SentPackets }),
		recorder.Col("received_packets", 0, func(r *Path) any { return &r.ReceivedPackets }),
		recorder.Col("loss_measured_pct", decimalsPct, func(r *Path) any { return &r.LossMeasuredPct }),
	},
	dnsCols(func(r *Path) *Settings { return &r.Settings }),
	[]recorder.Column[Path]{
		recorder.Col("run_id", 0, func(r *Path) any { return &r.RunID }),
	},
)...)

// RunRow is one row of gap-runs.csv: one run of the experiment (one
// condition: a size, a path, a TLS mode and a processing time, its Reps x
// Runs requests per mode), and how it ended. It is the file the shared
// run loop resumes from and records the host guard's aborts in; the
// condition's figures are its gap.csv and gap-path.csv rows, its
// requests gap-requests.csv's, all with the same run_id.
type RunRow struct {
	RunID          string
	Status, Reason string // recorder.RunOK, RunFailed or RunAborted, and why not ok
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.NewSchema(runFile,
	recorder.Col("run_id", 0, func(r *RunRow) any { return &r.RunID }),
	recorder.Col("status", 0, func(r *RunRow) any { return &r.Status }),
	recorder.Col("reason", 0, func(r *RunRow) any { return &r.Reason }),
)

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}

// okRequest reports whether r counts toward the medians.
func okRequest(r Request) bool { return r.Status >= 200 && r.Status <= 299 && r.Error == "" }

// SummarizeRun computes one condition's gap.csv row from its run's
// requests (the settings are the caller's: set Settings on the row).
// ClientKeepaliveMS is the median total of the ok keep-alive requests that
// reused a connection; ClientNewMS that of the ok new-connection requests,
// and ServerMS (ServerLastByteMS) the median of the server's header
// (last-byte) timings of those same requests.
// RTTMS is the median TCP RTT of every ok request.
func SummarizeRun(sizeBytes int, configuredRTTMS float64, method string, reqs []Request) Gap {
	var ka, nw, srv, last, rtt, hs, lookups, connects []float64
	resumed, v6, families := 0, 0, 0
	for _, r := range reqs {
		if okRequest(r) && r.TCPRTTMS.Valid {
			rtt = append(rtt, r.TCPRTTMS.Value)
		}
		switch {
		case !okRequest(r):
		case r.Mode == ModeKeepAlive && !r.NewConn:
			ka = append(ka, r.TotalMS)
		case r.Mode == ModeNew && r.NewConn:
			nw = append(nw, r.TotalMS)
			if r.ServerHeaderMS.Valid {
				srv = append(srv, r.ServerHeaderMS.Value)
			}
			if r.ServerLastByteMS.Valid {
				last = append(last, r.ServerLastByteMS.Value)
			}
			if r.DNSMS.Valid {
				lookups = append(lookups, r.DNSMS.Value)
			}
			if r.ConnectMS > 0 { // NaN: none
				connects = append(connects, r.ConnectMS)
			}
			if r.Family != "" {
				families++
				if r.Family == FamilyIPv6 {
					v6++
				}
			}
			if r.HandshakeMS.Valid {
				hs = append(hs, r.HandshakeMS.Value)
				if r.TLSResumed {
					resumed++
				}
			}
		}
	}
	g := Gap{SizeBytes: sizeBytes, ConfiguredRTTMS: configuredRTTMS, RTTMS: recorder.Some(recorder.Median(rtt)), DelayMethod: method,
		Runs: min(len(ka), len(nw)), ServerMS: recorder.Some(recorder.Median(srv)), ServerLastByteMS: recorder.Some(recorder.Median(last)),
		ClientKeepaliveMS: recorder.Some(recorder.Median(ka)), ClientNewMS: recorder.Some(recorder.Median(nw))}
	if len(hs) > 0 {
		g.HandshakeMS, g.ResumedPct = recorder.Some(recorder.Median(hs)), recorder.Some(100*float64(resumed)/float64(len(hs)))
	}
	if len(lookups) > 0 {
		g.DNSMS = recorder.Some(recorder.Median(lookups))
	}
	if len(connects) > 0 {
		g.ConnectMS = recorder.Some(recorder.Median(connects))
	}
	if families > 0 {
		g.IPv6Pct = recorder.Some(100 * float64(v6) / float64(families))
	}
	g.ServerBlindPct = blindPct(g.ServerMS, g.ClientNewMS)
	g.ServerLastByteBlindPct = blindPct(g.ServerLastByteMS, g.ClientNewMS)
	return g
}

// blindPct is the share of the client's time the server did not see,
// 100 * (1 - server / client), empty unless both were measured.
func blindPct(server, client recorder.Maybe) recorder.Maybe {
	if !server.Valid || !client.Valid || client.Value <= 0 {
		return recorder.Maybe{}
	}
	return recorder.Some(100 * (1 - server.Value/client.Value))
}
