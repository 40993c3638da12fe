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

func (Probe) Schema() *Schema[Probe] { return &probeSchema }

var probeSchema = Schema[Probe]{file: "probes.csv", cols: []Column[Probe]{
	Col("run_id", 0, func(r *Probe) any { return &r.RunID }),
	Col("server", 0, func(r *Probe) any { return &r.Server }),
	Col("hold", 0, func(r *Probe) any { return &r.Hold }),
	Col("probe_concurrency", 0, func(r *Probe) any { return &r.ProbeConcurrency }),
	Col("worker", 0, func(r *Probe) any { return &r.Worker }),
	Col("seq", 0, func(r *Probe) any { return &r.Seq }),
	Col("start_s", msOfS, func(r *Probe) any { return &r.StartS }),
	Col("connect_ms", usOfMS, func(r *Probe) any { return &r.ConnectMS }),
	Col("ttfb_ms", usOfMS, func(r *Probe) any { return &r.TTFBMS }),
	Col("latency_ms", usOfMS, func(r *Probe) any { return &r.LatencyMS }),
	Col("status", 0, func(r *Probe) any { return &r.Status }),
	Col("bytes", 0, func(r *Probe) any { return &r.Bytes }),
	Col("error", 0, func(r *Probe) any { return &r.Error }),
}}
