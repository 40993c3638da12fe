package recorder

// Modes of a latency-gap request (GapRequest.Mode).
const (
	GapKeepAlive = "keepalive" // on a connection kept alive from the previous request
	GapNew       = "new"       // on a new TCP connection, handshake included
)

// GapRow is one condition of the latency-gap experiment (gap.csv): what the
// server reported against what the client waited, for one response size
// and added round-trip time. Times are medians over the condition's ok
// requests; ServerBlindPct = 100 * (1 - ServerMS / ClientNewMS).
type GapRow struct {
	SizeBytes         int
	RTTMS             float64 // added round-trip time (twice the one-way delay)
	ServerMS          Maybe   // server-reported, on the new-connection requests
	ClientKeepaliveMS Maybe
	ClientNewMS       Maybe
	ServerBlindPct    Maybe
	Runs              int    // ok requests per mode (the smaller of the two)
	DelayMethod       string // netem, tun or none
}

// GapRequest is one request of the latency-gap experiment
// (gap-requests.csv). ConnectMS is NaN on a reused connection. ServerMS is
// what the server reported for its processing through the last body byte
// (a Server-Timing trailer); ServerHeaderMS the target's Server-Timing
// header, measured when the header was written.
type GapRequest struct {
	SizeBytes      int
	RTTMS          float64
	DelayMethod    string
	Mode           string // GapKeepAlive or GapNew
	Seq            int
	StartS         float64 // since the condition started
	NewConn        bool    // a TCP connection was opened for it
	ConnectMS      float64
	TTFBMS         float64
	TotalMS        float64 // start to last body byte
	ServerMS       Maybe
	ServerHeaderMS Maybe
	Status         int
	Bytes          int64
	Error          string
}

// GapPath is the network path of one latency-gap condition (gap-path.csv):
// how packets were delayed and, for the TUN delay line, how late it wrote
// them (actual write minus due) over the condition's packets, both
// directions. Valid is false when the p99 lateness exceeded 1 ms.
type GapPath struct {
	SizeBytes                                   int
	RTTMS                                       float64
	DelayMethod                                 string
	MTU                                         int
	CongestionControl                           string
	Packets, Dropped                            int
	LatenessP50MS, LatenessP99MS, LatenessMaxMS Maybe
	Valid                                       bool
}

var gapSchema = schema[GapRow]{file: "gap.csv", cols: []column[GapRow]{
	col("size_bytes", 0, func(r *GapRow) any { return &r.SizeBytes }),
	col("rtt_ms", usOfMS, func(r *GapRow) any { return &r.RTTMS }),
	col("server_ms", usOfMS, func(r *GapRow) any { return &r.ServerMS }),
	col("client_keepalive_ms", usOfMS, func(r *GapRow) any { return &r.ClientKeepaliveMS }),
	col("client_new_ms", usOfMS, func(r *GapRow) any { return &r.ClientNewMS }),
	col("server_blind_pct", milli, func(r *GapRow) any { return &r.ServerBlindPct }),
	col("runs", 0, func(r *GapRow) any { return &r.Runs }),
	col("delay_method", 0, func(r *GapRow) any { return &r.DelayMethod }),
}}

var gapRequestSchema = schema[GapRequest]{file: "gap-requests.csv", cols: []column[GapRequest]{
	col("size_bytes", 0, func(r *GapRequest) any { return &r.SizeBytes }),
	col("rtt_ms", usOfMS, func(r *GapRequest) any { return &r.RTTMS }),
	col("delay_method", 0, func(r *GapRequest) any { return &r.DelayMethod }),
	col("mode", 0, func(r *GapRequest) any { return &r.Mode }),
	col("seq", 0, func(r *GapRequest) any { return &r.Seq }),
	col("start_s", usOfS, func(r *GapRequest) any { return &r.StartS }),
	col("new_conn", 0, func(r *GapRequest) any { return &r.NewConn }),
	col("connect_ms", usOfMS, func(r *GapRequest) any { return &r.ConnectMS }),
	col("ttfb_ms", usOfMS, func(r *GapRequest) any { return &r.TTFBMS }),
	col("total_ms", usOfMS, func(r *GapRequest) any { return &r.TotalMS }),
	col("server_ms", usOfMS, func(r *GapRequest) any { return &r.ServerMS }),
	col("server_header_ms", usOfMS, func(r *GapRequest) any { return &r.ServerHeaderMS }),
	col("status", 0, func(r *GapRequest) any { return &r.Status }),
	col("bytes", 0, func(r *GapRequest) any { return &r.Bytes }),
	col("error", 0, func(r *GapRequest) any { return &r.Error }),
}}

var gapPathSchema = schema[GapPath]{file: "gap-path.csv", cols: []column[GapPath]{
	col("size_bytes", 0, func(r *GapPath) any { return &r.SizeBytes }),
	col("rtt_ms", usOfMS, func(r *GapPath) any { return &r.RTTMS }),
	col("delay_method", 0, func(r *GapPath) any { return &r.DelayMethod }),
	col("mtu", 0, func(r *GapPath) any { return &r.MTU }),
	col("congestion_control", 0, func(r *GapPath) any { return &r.CongestionControl }),
	col("packets", 0, func(r *GapPath) any { return &r.Packets }),
	col("dropped", 0, func(r *GapPath) any { return &r.Dropped }),
	col("lateness_p50_ms", usOfMS, func(r *GapPath) any { return &r.LatenessP50MS }),
	col("lateness_p99_ms", usOfMS, func(r *GapPath) any { return &r.LatenessP99MS }),
	col("lateness_max_ms", usOfMS, func(r *GapPath) any { return &r.LatenessMaxMS }),
	col("valid", 0, func(r *GapPath) any { return &r.Valid }),
}}

// gapSchemaOf returns the schema of a latency-gap row type, for schemaOf.
func gapSchemaOf(row any) any {
	switch row.(type) {
	case GapRow:
		return &gapSchema
	case GapRequest:
		return &gapRequestSchema
	case GapPath:
		return &gapPathSchema
	}
	return nil
}

// okGap reports whether r counts toward the medians.
func okGap(r GapRequest) bool { return r.Status >= 200 && r.Status <= 299 && r.Error == "" }

// SummarizeGap computes one condition's gap.csv row from its requests.
// ClientKeepaliveMS is the median total of the ok keep-alive requests that
// reused a connection; ClientNewMS that of the ok new-connection requests,
// and ServerMS the median the server reported for those same requests.
func SummarizeGap(sizeBytes int, rttMS float64, method string, reqs []GapRequest) GapRow {
	var ka, nw, srv []float64
	for _, r := range reqs {
		switch {
		case !okGap(r):
		case r.Mode == GapKeepAlive && !r.NewConn:
			ka = append(ka, r.TotalMS)
		case r.Mode == GapNew && r.NewConn:
			nw = append(nw, r.TotalMS)
			if r.ServerMS.Valid {
				srv = append(srv, r.ServerMS.Value)
			}
		}
	}
	g := GapRow{SizeBytes: sizeBytes, RTTMS: rttMS, DelayMethod: method, Runs: min(len(ka), len(nw)),
		ServerMS: Some(Median(srv)), ClientKeepaliveMS: Some(Median(ka)), ClientNewMS: Some(Median(nw))}
	if g.ServerMS.Valid && g.ClientNewMS.Valid && g.ClientNewMS.Value > 0 {
		g.ServerBlindPct = Some(100 * (1 - g.ServerMS.Value/g.ClientNewMS.Value))
	}
	return g
}
