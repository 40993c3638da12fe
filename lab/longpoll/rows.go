package longpoll

import (
	"math"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	probeFile = "probes.csv"
	groupFile = "groups.csv"
	runFile   = "longpoll-runs.csv"
)

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

func (Probe) Schema() *recorder.Schema[Probe] { return probeSchema }

var probeSchema = recorder.NewSchema(probeFile,
	recorder.Col("run_id", 0, func(r *Probe) any { return &r.RunID }),
	recorder.Col("server", 0, func(r *Probe) any { return &r.Server }),
	recorder.Col("hold", 0, func(r *Probe) any { return &r.Hold }),
	recorder.Col("probe_concurrency", 0, func(r *Probe) any { return &r.ProbeConcurrency }),
	recorder.Col("worker", 0, func(r *Probe) any { return &r.Worker }),
	recorder.Col("seq", 0, func(r *Probe) any { return &r.Seq }),
	recorder.Col("start_s", recorder.DecimalsSeconds, func(r *Probe) any { return &r.StartS }),
	recorder.Col("connect_ms", recorder.DecimalsMillis, func(r *Probe) any { return &r.ConnectMS }),
	recorder.Col("ttfb_ms", recorder.DecimalsMillis, func(r *Probe) any { return &r.TTFBMS }),
	recorder.Col("latency_ms", recorder.DecimalsMillis, func(r *Probe) any { return &r.LatencyMS }),
	recorder.Col("status", 0, func(r *Probe) any { return &r.Status }),
	recorder.Col("bytes", 0, func(r *Probe) any { return &r.Bytes }),
	recorder.Col("error", 0, func(r *Probe) any { return &r.Error }),
)

// Group is one run of a long-poll condition (groups.csv).
type Group struct {
	RunID            string // the run's probes in probes.csv have this run_id
	Server           string
	Hold             int
	ProbeConcurrency int
	Seconds          float64 // probing window, as planned
	// ElapsedS is how long the probing really took: from the window's
	// start until the last probe ended (a probe started in the window runs
	// to its end) or the run was interrupted.
	ElapsedS      float64
	OK, Failed    int
	P50MS, P95MS  recorder.Maybe
	MaxMS         recorder.Maybe
	ThroughputRPS float64 // OK probes per second of ElapsedS
	// Slots is how many requests the server works on at once (workers x
	// threads, or worker connections), FreeSlots the slots minus the held
	// long-polls (may be negative) and WorkerSlots one worker's share:
	// all empty for a server whose concurrency its size does not bound
	// (an event loop: Uvicorn, Node.js).
	Slots, FreeSlots recorder.Maybe
	// MaxWorkerHeld is the most long-polls one worker held at once
	// (sampled); empty when the stack cannot tell.
	MaxWorkerHeld recorder.Maybe
	// FullWorkerS is how long some worker had every thread holding a
	// long-poll (sampled), when a request it accepts waits for a long-poll
	// to end however many slots other workers have free; empty with
	// MaxWorkerHeld.
	FullWorkerS recorder.Maybe
	// ProbesOver1s counts successful probes slower than one second.
	ProbesOver1s int
	// HeldSamples is how many times the held long-polls per worker were
	// sampled over the window (0 when the stack cannot tell).
	HeldSamples int
	// Waves counts the long-poll issue waves in effect during the span the
	// held long-polls were sampled over (the window, not the probes'
	// elapsed time, which a stuck probe can stretch past it):
	// the holders' requests are issued together and re-issued together
	// when they return, and each wave may land them differently on the
	// workers. FullWaves counts the waves during which some worker was
	// sampled full. Both are empty when nothing was held or sampled.
	Waves, FullWaves recorder.Maybe
	WorkerSlots      recorder.Maybe
	// FullSamples is how many of the HeldSamples found some worker with
	// every thread holding a long-poll: FullWorkerS counted in samples,
	// which a machine too loaded to sample on time does not shorten.
	// Empty with FullWorkerS.
	FullSamples recorder.Maybe
}

func (Group) Schema() *recorder.Schema[Group] { return groupSchema }

var groupSchema = recorder.NewSchema(groupFile,
	recorder.Col("run_id", 0, func(r *Group) any { return &r.RunID }),
	recorder.Col("server", 0, func(r *Group) any { return &r.Server }),
	recorder.Col("hold", 0, func(r *Group) any { return &r.Hold }),
	recorder.Col("probe_concurrency", 0, func(r *Group) any { return &r.ProbeConcurrency }),
	recorder.Col("seconds", recorder.DecimalsSeconds, func(r *Group) any { return &r.Seconds }),
	recorder.Col("elapsed_s", recorder.DecimalsSeconds, func(r *Group) any { return &r.ElapsedS }),
	recorder.Col("ok", 0, func(r *Group) any { return &r.OK }),
	recorder.Col("failed", 0, func(r *Group) any { return &r.Failed }),
	recorder.Col("p50_ms", recorder.DecimalsMillis, func(r *Group) any { return &r.P50MS }),
	recorder.Col("p95_ms", recorder.DecimalsMillis, func(r *Group) any { return &r.P95MS }),
	recorder.Col("max_ms", recorder.DecimalsMillis, func(r *Group) any { return &r.MaxMS }),
	recorder.Col("throughput_rps", recorder.DecimalsMilli, func(r *Group) any { return &r.ThroughputRPS }),
	recorder.Col("slots", 0, func(r *Group) any { return &r.Slots }),
	recorder.Col("free_slots", 0, func(r *Group) any { return &r.FreeSlots }),
	recorder.Col("max_worker_held", 0, func(r *Group) any { return &r.MaxWorkerHeld }),
	recorder.Col("full_worker_s", recorder.DecimalsSeconds, func(r *Group) any { return &r.FullWorkerS }),
	recorder.Col("probes_over_1s", 0, func(r *Group) any { return &r.ProbesOver1s }),
	recorder.Col("held_samples", 0, func(r *Group) any { return &r.HeldSamples }),
	recorder.Col("waves", 0, func(r *Group) any { return &r.Waves }),
	recorder.Col("full_waves", 0, func(r *Group) any { return &r.FullWaves }),
	recorder.Col("worker_slots", 0, func(r *Group) any { return &r.WorkerSlots }),
	recorder.Col("full_samples", 0, func(r *Group) any { return &r.FullSamples }),
)

// RunRow is one row of longpoll-runs.csv: one run of the long-poll
// experiment and how it ended. Status is ok when the run measured its
// whole window (its figures are then groups.csv's row of the same run_id),
// failed when the stack, the instruments or the load generator failed, or
// results were not all written, aborted when it was interrupted or the
// host was too busy (--max-host-cpu); Reason says why. Probes counts the
// rows the run wrote to probes.csv, whatever its status. A resumed session
// keeps the runs that are ok here and drops every other run's rows from
// each file.
type RunRow struct {
	RunID            string
	Server           string
	Hold             int
	ProbeConcurrency int
	Rep              int
	StartedAt        time.Time
	Status, Reason   string
	Probes           int
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.NewSchema(runFile,
	recorder.Col("run_id", 0, func(r *RunRow) any { return &r.RunID }),
	recorder.Col("server", 0, func(r *RunRow) any { return &r.Server }),
	recorder.Col("hold", 0, func(r *RunRow) any { return &r.Hold }),
	recorder.Col("probe_concurrency", 0, func(r *RunRow) any { return &r.ProbeConcurrency }),
	recorder.Col("rep", 0, func(r *RunRow) any { return &r.Rep }),
	recorder.Col("started_at", 0, func(r *RunRow) any { return &r.StartedAt }),
	recorder.Col("status", 0, func(r *RunRow) any { return &r.Status }),
	recorder.Col("reason", 0, func(r *RunRow) any { return &r.Reason }),
	recorder.Col("probes", 0, func(r *RunRow) any { return &r.Probes }),
)

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}

// ProbeSummary is a long-poll run's probes summarized as they are
// measured: counts and a bounded latency histogram, so a run's memory does
// not grow with its probes (a closed loop against a fast server sends
// thousands a second). The zero value is empty and ready.
type ProbeSummary struct {
	ok, failed, over1s int
	lat                recorder.DurationHist // successful probes' latencies
}

// Add counts probe p: successful when it has no error and a 2xx or 3xx
// status.
func (s *ProbeSummary) Add(p Probe) {
	if p.Error != "" || p.Status < 200 || p.Status >= 400 {
		s.failed++
		return
	}
	s.ok++
	s.lat.Add(time.Duration(p.LatencyMS * float64(time.Millisecond)))
	if p.LatencyMS > 1000 {
		s.over1s++
	}
}

// Group is g with the probes' figures: counts, percentiles (nearest rank
// over the successful probes' latencies, within 1/2048 of the exact one;
// the maximum exact), throughput as the successful probes over ElapsedS
// (which the caller sets), and the free slots.
func (s *ProbeSummary) Group(g Group) Group {
	g.OK, g.Failed, g.ProbesOver1s = s.ok, s.failed, s.over1s
	g.P50MS, g.P95MS, g.MaxMS = recorder.Some(s.lat.Percentile(50)), recorder.Some(s.lat.Percentile(95)), recorder.Some(s.lat.Percentile(100))
	g.ThroughputRPS = 0
	if g.ElapsedS > 0 {
		g.ThroughputRPS = float64(g.OK) / g.ElapsedS
	}
	g.FreeSlots = recorder.Maybe{}
	if g.Slots.Valid {
		g.FreeSlots = recorder.Some(g.Slots.Value - float64(g.Hold))
	}
	return g
}

// SummarizeProbes is g with the figures of probes (ProbeSummary.Group).
func SummarizeProbes(g Group, probes []Probe) Group {
	var s ProbeSummary
	for _, p := range probes {
		s.Add(p)
	}
	return s.Group(g)
}

// Summary is one long-poll condition over its runs (repetitions):
// in how many runs some worker was full, and in how many a probe took
// over a second, with the issue waves of all its runs.
type Summary struct {
	Server            string
	Hold, Probes      int
	Runs              int
	RunsFull          int // runs in which a worker was sampled full
	RunsOver1s        int // runs with a probe slower than 1 s
	Waves, FullWaves  int // summed over the runs that counted them
	Sampled, Counted  int // runs that sampled held long-polls, runs that counted waves
	ProbesOK, Elapsed float64
}

// Summarize groups a long-poll experiment's runs by condition
// (server, hold, probes), in order of first appearance.
func Summarize(groups []Group) []Summary {
	var out []Summary
	idx := map[[3]string]int{}
	for _, g := range groups {
		k := [3]string{g.Server, strconv.Itoa(g.Hold), strconv.Itoa(g.ProbeConcurrency)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Summary{Server: g.Server, Hold: g.Hold, Probes: g.ProbeConcurrency})
		}
		s := &out[i]
		s.Runs++
		s.ProbesOK += float64(g.OK)
		s.Elapsed += g.ElapsedS
		if g.ProbesOver1s > 0 {
			s.RunsOver1s++
		}
		if g.FullWorkerS.Valid {
			s.Sampled++
			if g.FullWorkerS.Value > 0 {
				s.RunsFull++
			}
		}
		if g.Waves.Valid && g.FullWaves.Valid {
			s.Counted++
			s.Waves += int(g.Waves.Value)
			s.FullWaves += int(g.FullWaves.Value)
		}
	}
	return out
}

// Comparison tests whether two conditions that differ only in their
// probe count differ in how often a run had a probe over 1 s, and in how
// often a worker was full (Fisher's exact test, two-sided).
type Comparison struct {
	A, B               Summary
	POver1s, PFullRuns float64 // NaN when not computable
}

// Compare pairs the conditions that share a server and a hold count and
// differ in probes, each with at least two runs.
func Compare(sums []Summary) []Comparison {
	var out []Comparison
	for i, a := range sums {
		for _, b := range sums[i+1:] {
			if a.Server != b.Server || a.Hold != b.Hold || a.Probes == b.Probes || a.Runs < 2 || b.Runs < 2 {
				continue
			}
			c := Comparison{A: a, B: b, PFullRuns: math.NaN(),
				POver1s: FisherExact(a.RunsOver1s, a.Runs-a.RunsOver1s, b.RunsOver1s, b.Runs-b.RunsOver1s)}
			if a.Sampled > 0 && b.Sampled > 0 {
				c.PFullRuns = FisherExact(a.RunsFull, a.Sampled-a.RunsFull, b.RunsFull, b.Sampled-b.RunsFull)
			}
			out = append(out, c)
		}
	}
	return out
}
