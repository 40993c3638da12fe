package recorder

// GapRow is one condition of the latency-gap experiment (gap.csv): what the
// server reported against what the client waited, for one response size
// and added round-trip time. Times are medians over the condition's ok
// requests. ServerMS is what the server reported in its Server-Timing
// header (what a server-side dashboard sees), ServerBlindPct = 100 * (1 -
// ServerMS / ClientNewMS); ServerLastByteMS and ServerLastByteBlindPct
// are the same for the server's timing through the last byte written.
// ConfiguredRTTMS is the round-trip time the path was asked to add (twice
// the one-way delay); RTTMS is what the kernel measured on the
// condition's connections (TCP_INFO minimum RTT, median over the ok
// requests), so a row says the delay it really had.
type GapRow struct {
	SizeBytes         int
	ConfiguredRTTMS   float64
	RTTMS             Maybe
	ServerMS          Maybe // server-reported (header), on the new-connection requests
	ClientKeepaliveMS Maybe
	ClientNewMS       Maybe
	ServerBlindPct    Maybe
	Runs              int    // ok requests per mode (the smaller of the two)
	DelayMethod       string // netem, tun or none
	// The server's figures through the last body byte written, on the
	// same requests.
	ServerLastByteMS, ServerLastByteBlindPct Maybe
	GapSettings
	// HandshakeMS is the median TLS handshake of the new-connection
	// requests (empty without TLS); ResumedPct the share of them that
	// resumed a session.
	HandshakeMS, ResumedPct Maybe
	// RunID is the condition's run (gap-runs.csv): resuming a session
	// keeps a row only if its run completed.
	RunID string
}

func (GapRow) Schema() *Schema[GapRow] { return &gapSchema }

var gapSchema = Schema[GapRow]{file: "gap.csv", cols: append(append([]Column[GapRow]{
	Col("size_bytes", 0, func(r *GapRow) any { return &r.SizeBytes }),
	Col("configured_rtt_ms", usOfMS, func(r *GapRow) any { return &r.ConfiguredRTTMS }),
	Col("rtt_ms", usOfMS, func(r *GapRow) any { return &r.RTTMS }),
	Col("server_ms", usOfMS, func(r *GapRow) any { return &r.ServerMS }),
	Col("client_keepalive_ms", usOfMS, func(r *GapRow) any { return &r.ClientKeepaliveMS }),
	Col("client_new_ms", usOfMS, func(r *GapRow) any { return &r.ClientNewMS }),
	Col("server_blind_pct", milli, func(r *GapRow) any { return &r.ServerBlindPct }),
	Col("runs", 0, func(r *GapRow) any { return &r.Runs }),
	Col("delay_method", 0, func(r *GapRow) any { return &r.DelayMethod }),
	Col("server_last_byte_ms", usOfMS, func(r *GapRow) any { return &r.ServerLastByteMS }),
	Col("server_last_byte_blind_pct", milli, func(r *GapRow) any { return &r.ServerLastByteBlindPct }),
}, gapSettingsCols(func(r *GapRow) *GapSettings { return &r.GapSettings })...),
	Col("handshake_ms", usOfMS, func(r *GapRow) any { return &r.HandshakeMS }),
	Col("resumed_pct", milli, func(r *GapRow) any { return &r.ResumedPct }),
	Col("run_id", 0, func(r *GapRow) any { return &r.RunID }),
)}

// okGap reports whether r counts toward the medians.
func okGap(r GapRequest) bool { return r.Status >= 200 && r.Status <= 299 && r.Error == "" }

// SummarizeGap computes one condition's gap.csv row from its requests
// (the settings are the caller's: set GapSettings on the row).
// ClientKeepaliveMS is the median total of the ok keep-alive requests that
// reused a connection; ClientNewMS that of the ok new-connection requests,
// and ServerMS (ServerLastByteMS) the median of the server's header
// (last-byte) timings of those same requests.
// RTTMS is the median TCP RTT of every ok request.
func SummarizeGap(sizeBytes int, configuredRTTMS float64, method string, reqs []GapRequest) GapRow {
	var ka, nw, srv, last, rtt, hs []float64
	resumed := 0
	for _, r := range reqs {
		if okGap(r) && r.TCPRTTMS.Valid {
			rtt = append(rtt, r.TCPRTTMS.Value)
		}
		switch {
		case !okGap(r):
		case r.Mode == GapKeepAlive && !r.NewConn:
			ka = append(ka, r.TotalMS)
		case r.Mode == GapNew && r.NewConn:
			nw = append(nw, r.TotalMS)
			if r.ServerHeaderMS.Valid {
				srv = append(srv, r.ServerHeaderMS.Value)
			}
			if r.ServerLastByteMS.Valid {
				last = append(last, r.ServerLastByteMS.Value)
			}
			if r.HandshakeMS.Valid {
				hs = append(hs, r.HandshakeMS.Value)
				if r.TLSResumed {
					resumed++
				}
			}
		}
	}
	g := GapRow{SizeBytes: sizeBytes, ConfiguredRTTMS: configuredRTTMS, RTTMS: Some(Median(rtt)), DelayMethod: method, Runs: min(len(ka), len(nw)),
		ServerMS: Some(Median(srv)), ServerLastByteMS: Some(Median(last)), ClientKeepaliveMS: Some(Median(ka)), ClientNewMS: Some(Median(nw))}
	if len(hs) > 0 {
		g.HandshakeMS, g.ResumedPct = Some(Median(hs)), Some(100*float64(resumed)/float64(len(hs)))
	}
	g.ServerBlindPct = blindPct(g.ServerMS, g.ClientNewMS)
	g.ServerLastByteBlindPct = blindPct(g.ServerLastByteMS, g.ClientNewMS)
	return g
}

// blindPct is the share of the client's time the server did not see,
// 100 * (1 - server / client), empty unless both were measured.
func blindPct(server, client Maybe) Maybe {
	if !server.Valid || !client.Valid || client.Value <= 0 {
		return Maybe{}
	}
	return Some(100 * (1 - server.Value/client.Value))
}
