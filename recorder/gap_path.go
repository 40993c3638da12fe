package recorder

// GapPath is the network path of one latency-gap condition (gap-path.csv):
// how packets were delayed and, for the TUN delay line, how late it wrote
// them (actual write minus due) over the condition's packets, both
// directions; the round-trip time it was asked to add and the one the
// kernel measured on the condition's connections. Valid is false when the
// measured RTT is more than 1 ms from the configured one, the TUN delay
// line's p99 lateness exceeded 1 ms, or the loss measured at the path's
// ends (LossMeasuredPct) does not agree with the asked one within the
// binomial's bound for its packets: the path was not what the row claims.
type GapPath struct {
	SizeBytes                                   int
	ConfiguredRTTMS                             float64
	RTTMS                                       Maybe
	DelayMethod                                 string
	MTU                                         int
	CongestionControl                           string
	Packets, Dropped                            int
	LatenessP50MS, LatenessP99MS, LatenessMaxMS Maybe
	Valid                                       bool
	GapSettings
	// PathPackets are the packets that entered the path during the
	// condition, both directions, and LossAppliedPct the share it dropped
	// at random, both by the path's own count; empty where the path has
	// none (method none without loss).
	PathPackets    Maybe
	LossAppliedPct Maybe
	// OverflowDrops are the packets the path dropped, by its own count,
	// because its queue was full (a rate limit's queue; not random loss,
	// not in LossAppliedPct). SentPackets and ReceivedPackets are the IP
	// packets its two ends sent into it and received from it (both
	// directions, the namespaces' own counters, not the path's), and
	// LossMeasuredPct the share of those sent that did not arrive, the
	// overflow drops left out of both: the loss compared with
	// GapSettings.LossPct for Valid. Empty where not counted.
	OverflowDrops   Maybe
	SentPackets     Maybe
	ReceivedPackets Maybe
	LossMeasuredPct Maybe
	RunID           string // its condition's run (gap-runs.csv)
}

func (GapPath) Schema() *Schema[GapPath] { return &gapPathSchema }

var gapPathSchema = Schema[GapPath]{file: "gap-path.csv", cols: append(append([]Column[GapPath]{
	Col("size_bytes", 0, func(r *GapPath) any { return &r.SizeBytes }),
	Col("configured_rtt_ms", usOfMS, func(r *GapPath) any { return &r.ConfiguredRTTMS }),
	Col("rtt_ms", usOfMS, func(r *GapPath) any { return &r.RTTMS }),
	Col("delay_method", 0, func(r *GapPath) any { return &r.DelayMethod }),
	Col("mtu", 0, func(r *GapPath) any { return &r.MTU }),
	Col("congestion_control", 0, func(r *GapPath) any { return &r.CongestionControl }),
	Col("packets", 0, func(r *GapPath) any { return &r.Packets }),
	Col("dropped", 0, func(r *GapPath) any { return &r.Dropped }),
	Col("lateness_p50_ms", usOfMS, func(r *GapPath) any { return &r.LatenessP50MS }),
	Col("lateness_p99_ms", usOfMS, func(r *GapPath) any { return &r.LatenessP99MS }),
	Col("lateness_max_ms", usOfMS, func(r *GapPath) any { return &r.LatenessMaxMS }),
	Col("valid", 0, func(r *GapPath) any { return &r.Valid }),
}, gapSettingsCols(func(r *GapPath) *GapSettings { return &r.GapSettings })...),
	Col("path_packets", 0, func(r *GapPath) any { return &r.PathPackets }),
	Col("loss_applied_pct", milli, func(r *GapPath) any { return &r.LossAppliedPct }),
	Col("overflow_drops", 0, func(r *GapPath) any { return &r.OverflowDrops }),
	Col("sent_packets", 0, func(r *GapPath) any { return &r.SentPackets }),
	Col("received_packets", 0, func(r *GapPath) any { return &r.ReceivedPackets }),
	Col("loss_measured_pct", milli, func(r *GapPath) any { return &r.LossMeasuredPct }),
	Col("run_id", 0, func(r *GapPath) any { return &r.RunID }),
)}
