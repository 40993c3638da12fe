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

func (GapPath) schema() *schema[GapPath] { return &gapPathSchema }

var gapPathSchema = schema[GapPath]{file: "gap-path.csv", cols: append(append([]column[GapPath]{
	col("size_bytes", 0, func(r *GapPath) any { return &r.SizeBytes }),
	col("configured_rtt_ms", usOfMS, func(r *GapPath) any { return &r.ConfiguredRTTMS }),
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
}, gapSettingsCols(func(r *GapPath) *GapSettings { return &r.GapSettings })...),
	col("path_packets", 0, func(r *GapPath) any { return &r.PathPackets }),
	col("loss_applied_pct", milli, func(r *GapPath) any { return &r.LossAppliedPct }),
	col("overflow_drops", 0, func(r *GapPath) any { return &r.OverflowDrops }),
	col("sent_packets", 0, func(r *GapPath) any { return &r.SentPackets }),
	col("received_packets", 0, func(r *GapPath) any { return &r.ReceivedPackets }),
	col("loss_measured_pct", milli, func(r *GapPath) any { return &r.LossMeasuredPct }),
	col("run_id", 0, func(r *GapPath) any { return &r.RunID }),
)}
