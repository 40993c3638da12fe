package recorder

// Probe is one closed-loop probe request of the long-poll experiment
// (probes.csv): the requests.csv columns that apply to a closed loop, plus
// the condition and which probe worker sent it.
type Probe struct {
	RunID            string
	Server           string
	Hold             int // long-polls held open
	ProbeConcurrency int // closed-loop probe workers
	Worker, Seq      int
	StartS           float64
	ConnectMS        float64
	TTFBMS           float64
	LatencyMS        float64
	Status           int
	Bytes            int64
	Error            string
}

// LongPollGroup is one run of a long-poll condition (groups.csv).
type LongPollGroup struct {
	RunID            string // the run's probes in probes.csv have this run_id
	Server           string
	Hold             int
	ProbeConcurrency int
	Seconds          float64 // probing window
	OK, Failed       int
	P50MS, P95MS     Maybe
	MaxMS            Maybe
	ThroughputRPS    float64 // OK probes per second of the window
	Slots            int     // workers x threads
	FreeSlots        int     // slots minus held long-polls (may be negative)
	// MaxWorkerHeld is the most long-polls one worker held at once
	// (sampled); empty when the stack cannot tell.
	MaxWorkerHeld Maybe
	// FullWorkerS is how long some worker had every thread holding a
	// long-poll (sampled), when a request it accepts waits for a long-poll
	// to end however many slots other workers have free; empty with
	// MaxWorkerHeld.
	FullWorkerS Maybe
	// ProbesOver1s counts successful probes slower than one second.
	ProbesOver1s int
}

var probeSchema = schema[Probe]{file: "probes.csv", cols: []column[Probe]{
	col("run_id", 0, func(r *Probe) any { return &r.RunID }),
	col("server", 0, func(r *Probe) any { return &r.Server }),
	col("hold", 0, func(r *Probe) any { return &r.Hold }),
	col("probe_concurrency", 0, func(r *Probe) any { return &r.ProbeConcurrency }),
	col("worker", 0, func(r *Probe) any { return &r.Worker }),
	col("seq", 0, func(r *Probe) any { return &r.Seq }),
	col("start_s", msOfS, func(r *Probe) any { return &r.StartS }),
	col("connect_ms", usOfMS, func(r *Probe) any { return &r.ConnectMS }),
	col("ttfb_ms", usOfMS, func(r *Probe) any { return &r.TTFBMS }),
	col("latency_ms", usOfMS, func(r *Probe) any { return &r.LatencyMS }),
	col("status", 0, func(r *Probe) any { return &r.Status }),
	col("bytes", 0, func(r *Probe) any { return &r.Bytes }),
	col("error", 0, func(r *Probe) any { return &r.Error }),
}}

var longPollGroupSchema = schema[LongPollGroup]{file: "groups.csv", cols: []column[LongPollGroup]{
	col("run_id", 0, func(r *LongPollGroup) any { return &r.RunID }),
	col("server", 0, func(r *LongPollGroup) any { return &r.Server }),
	col("hold", 0, func(r *LongPollGroup) any { return &r.Hold }),
	col("probe_concurrency", 0, func(r *LongPollGroup) any { return &r.ProbeConcurrency }),
	col("seconds", msOfS, func(r *LongPollGroup) any { return &r.Seconds }),
	col("ok", 0, func(r *LongPollGroup) any { return &r.OK }),
	col("failed", 0, func(r *LongPollGroup) any { return &r.Failed }),
	col("p50_ms", usOfMS, func(r *LongPollGroup) any { return &r.P50MS }),
	col("p95_ms", usOfMS, func(r *LongPollGroup) any { return &r.P95MS }),
	col("max_ms", usOfMS, func(r *LongPollGroup) any { return &r.MaxMS }),
	col("throughput_rps", milli, func(r *LongPollGroup) any { return &r.ThroughputRPS }),
	col("slots", 0, func(r *LongPollGroup) any { return &r.Slots }),
	col("free_slots", 0, func(r *LongPollGroup) any { return &r.FreeSlots }),
	col("max_worker_held", 0, func(r *LongPollGroup) any { return &r.MaxWorkerHeld }),
	col("full_worker_s", msOfS, func(r *LongPollGroup) any { return &r.FullWorkerS }),
	col("probes_over_1s", 0, func(r *LongPollGroup) any { return &r.ProbesOver1s }),
}}

// SummarizeProbes computes a long-poll condition's row from its probes:
// percentiles are nearest-rank over the successful probes' latencies.
func SummarizeProbes(g LongPollGroup, probes []Probe) LongPollGroup {
	var lat []float64
	g.OK, g.Failed, g.ProbesOver1s = 0, 0, 0
	for _, p := range probes {
		if p.Error == "" && p.Status >= 200 && p.Status < 400 {
			g.OK++
			lat = append(lat, p.LatencyMS)
			if p.LatencyMS > 1000 {
				g.ProbesOver1s++
			}
		} else {
			g.Failed++
		}
	}
	g.P50MS, g.P95MS, g.MaxMS = Some(NearestRank(lat, 50)), Some(NearestRank(lat, 95)), Some(NearestRank(lat, 100))
	if g.Seconds > 0 {
		g.ThroughputRPS = float64(g.OK) / g.Seconds
	}
	g.FreeSlots = g.Slots - g.Hold
	return g
}
