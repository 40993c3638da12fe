package recorder

// GapPath is the network path of one latency-gap condition (gap-path.csv):
// how packets were delayed and, for the TUN delay line, how late it wrote
// them (actual write minus due) over the condition's packets, both
// directions; the round-trip time it was asked to add and the one the
// kernel measured on the condition's connections. Valid is false when the
// measured RTT is more than 1 ms from the configured one, or the TUN
// delay line's p99 lateness exceeded 1 ms: the path was not what the row
// claims.
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
	// (the loss it applied, against GapSettings.LossPct asked for); empty
	// where the path cannot count them.
	PathPackets    Maybe
	LossAppliedPct Maybe
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
)}
