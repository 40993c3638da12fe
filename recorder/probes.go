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

func (Probe) schema() *schema[Probe] { return &probeSchema }

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
