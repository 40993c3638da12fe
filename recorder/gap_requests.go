package recorder

// GapRequest is one request of the latency-gap experiment
// (gap-requests.csv). ConnectMS is NaN on a reused connection.
// ServerHeaderMS is the server's Server-Timing header, measured when the
// header was written (what a server-side dashboard sees);
// ServerLastByteMS what it reported for its processing through the last
// body byte written (a Server-Timing trailer). TCPRTTMS is its
// connection's minimum RTT as the kernel measured it (TCP_INFO), and
// ConfiguredRTTMS the round-trip time the path was asked to add.
type GapRequest struct {
	SizeBytes        int
	ConfiguredRTTMS  float64
	DelayMethod      string
	Mode             string // GapKeepAlive or GapNew
	Seq              int
	StartS           float64 // since the condition started
	NewConn          bool    // a TCP connection was opened for it
	ConnectMS        float64
	TTFBMS           float64
	TotalMS          float64 // start to last body byte
	ServerHeaderMS   Maybe
	ServerLastByteMS Maybe
	TCPRTTMS         Maybe
	Status           int
	Bytes            int64
	Error            string
	GapSettings
	// HandshakeMS is its TLS handshake (empty without one) and TLSResumed
	// whether that resumed a session.
	HandshakeMS Maybe
	TLSResumed  bool
	RunID       string // its condition's run (gap-runs.csv)
}

// Modes of a latency-gap request (GapRequest.Mode).
const (
	GapKeepAlive = "keepalive" // on a connection kept alive from the previous request
	GapNew       = "new"       // on a new TCP connection, handshake included
)

func (GapRequest) Schema() *Schema[GapRequest] { return &gapRequestSchema }

var gapRequestSchema = Schema[GapRequest]{file: "gap-requests.csv", cols: append(append([]Column[GapRequest]{
	Col("size_bytes", 0, func(r *GapRequest) any { return &r.SizeBytes }),
	Col("configured_rtt_ms", usOfMS, func(r *GapRequest) any { return &r.ConfiguredRTTMS }),
	Col("delay_method", 0, func(r *GapRequest) any { return &r.DelayMethod }),
	Col("mode", 0, func(r *GapRequest) any { return &r.Mode }),
	Col("seq", 0, func(r *GapRequest) any { return &r.Seq }),
	Col("start_s", usOfS, func(r *GapRequest) any { return &r.StartS }),
	Col("new_conn", 0, func(r *GapRequest) any { return &r.NewConn }),
	Col("connect_ms", usOfMS, func(r *GapRequest) any { return &r.ConnectMS }),
	Col("ttfb_ms", usOfMS, func(r *GapRequest) any { return &r.TTFBMS }),
	Col("total_ms", usOfMS, func(r *GapRequest) any { return &r.TotalMS }),
	Col("server_header_ms", usOfMS, func(r *GapRequest) any { return &r.ServerHeaderMS }),
	Col("server_last_byte_ms", usOfMS, func(r *GapRequest) any { return &r.ServerLastByteMS }),
	Col("tcp_rtt_ms", usOfMS, func(r *GapRequest) any { return &r.TCPRTTMS }),
	Col("status", 0, func(r *GapRequest) any { return &r.Status }),
	Col("bytes", 0, func(r *GapRequest) any { return &r.Bytes }),
	Col("error", 0, func(r *GapRequest) any { return &r.Error }),
}, gapSettingsCols(func(r *GapRequest) *GapSettings { return &r.GapSettings })...),
	Col("handshake_ms", usOfMS, func(r *GapRequest) any { return &r.HandshakeMS }),
	Col("tls_resumed", 0, func(r *GapRequest) any { return &r.TLSResumed }),
	Col("run_id", 0, func(r *GapRequest) any { return &r.RunID }),
)}
