package recorder

// GapSettings are a latency-gap condition's settings beyond its response
// size and symmetric delay, in gap.csv, gap-requests.csv and gap-path.csv
// after the columns of before: the TLS mode, the path's random loss, rate
// and one-way delays, and the server's processing time per request.
type GapSettings struct {
	TLS string // GapTLSNone, GapTLS12, GapTLS13, GapTLS13Resume
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
	WorkKind               string  // how it spends it: GapWorkSleep or GapWorkCPU
}

// TLS modes of a latency-gap condition (GapSettings.TLS).
const (
	GapTLSNone     = "none"
	GapTLS12       = "1.2"
	GapTLS13       = "1.3"
	GapTLS13Resume = "1.3-resume" // TLS 1.3, new connections resume the previous session (no 0-RTT)
)

// GapTLSModes lists the TLS modes.
var GapTLSModes = []string{GapTLSNone, GapTLS12, GapTLS13, GapTLS13Resume}

// Kinds of server work (GapSettings.WorkKind).
const (
	GapWorkSleep = "sleep" // waits: an I/O-bound handler
	GapWorkCPU   = "cpu"   // spins: a CPU-bound handler
)

// gapSettingsCols are the GapSettings columns of a row type that embeds it.
func gapSettingsCols[T any](s func(*T) *GapSettings) []Column[T] {
	return []Column[T]{
		Col("tls", 0, func(r *T) any { return &s(r).TLS }),
		Col("loss_pct", milli, func(r *T) any { return &s(r).LossPct }),
		Col("rate", 0, func(r *T) any { return &s(r).RateBits }),
		Col("delay_up_ms", usOfMS, func(r *T) any { return &s(r).DelayUpMS }),
		Col("delay_down_ms", usOfMS, func(r *T) any { return &s(r).DelayDownMS }),
		Col("work_ms", usOfMS, func(r *T) any { return &s(r).WorkMS }),
		Col("work_kind", 0, func(r *T) any { return &s(r).WorkKind }),
	}
}
