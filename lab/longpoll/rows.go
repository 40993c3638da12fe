package longpoll

import (
	"math"
	"slices"
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
	RunID            string  `csv:"run_id"`
	Server           string  `csv:"server"`
	Hold             int     `csv:"hold"`              // long-polls held open
	ProbeConcurrency int     `csv:"probe_concurrency"` // closed-loop probe workers
	Worker           int     `csv:"worker"`
	Seq              int     `csv:"seq"`
	StartS           float64 `csv:"start_s,seconds"`
	ConnectMS        float64 `csv:"connect_ms,millis"`
	TTFBMS           float64 `csv:"ttfb_ms,millis"`
	LatencyMS        float64 `csv:"latency_ms,millis"`
	Status           int     `csv:"status"`
	Bytes            int64   `csv:"bytes"`
	Error            string  `csv:"error"`
}

func (Probe) Schema() *recorder.Schema[Probe] { return probeSchema }

var probeSchema = recorder.Tagged[Probe](probeFile)

// Group is one run of a long-poll condition (groups.csv).
type Group struct {
	RunID            string  `csv:"run_id"` // the run's probes in probes.csv have this run_id
	Server           string  `csv:"server"`
	Hold             int     `csv:"hold"`
	ProbeConcurrency int     `csv:"probe_concurrency"`
	Seconds          float64 `csv:"seconds,seconds"` // probing window, as planned
	// ElapsedS is how long the probing really took: from the window's
	// start until the last probe ended (a probe started in the window runs
	// to its end) or the run was interrupted.
	ElapsedS      float64        `csv:"elapsed_s,seconds"`
	OK            int            `csv:"ok"`
	Failed        int            `csv:"failed"`
	P50MS         recorder.Maybe `csv:"p50_ms,millis"`
	P95MS         recorder.Maybe `csv:"p95_ms,millis"`
	MaxMS         recorder.Maybe `csv:"max_ms,millis"`
	ThroughputRPS float64        `csv:"throughput_rps,milli"` // OK probes per second of ElapsedS
	// Slots is how many requests the server works on at once (workers x
	// threads, or worker connections), FreeSlots the slots minus the held
	// long-polls (may be negative) and WorkerSlots one worker's share:
	// all empty for a server whose concurrency its size does not bound
	// (an event loop: Uvicorn, Node.js).
	Slots     recorder.Maybe `csv:"slots"`
	FreeSlots recorder.Maybe `csv:"free_slots"`
	// MaxWorkerHeld is the most long-polls one worker held at once
	// (sampled); empty when the stack cannot tell.
	MaxWorkerHeld recorder.Maybe `csv:"max_worker_held"`
	// FullWorkerS is how long some worker had every thread holding a
	// long-poll (sampled), when a request it accepts waits for a long-poll
	// to end however many slots other workers have free; empty with
	// MaxWorkerHeld.
	FullWorkerS recorder.Maybe `csv:"full_worker_s,seconds"`
	// ProbesOver1s counts successful probes slower than one second.
	ProbesOver1s int `csv:"probes_over_1s"`
	// HeldSamples is how many times the held long-polls per worker were
	// sampled over the window (0 when the stack cannot tell).
	HeldSamples int `csv:"held_samples"`
	// Waves counts the long-poll issue waves in effect during the span the
	// held long-polls were sampled over (the window, not the probes'
	// elapsed time, which a stuck probe can stretch past it):
	// the holders' requests are issued together and re-issued together
	// when they return, and each wave may land them differently on the
	// workers. FullWaves counts the waves during which some worker was
	// sampled full. Both are empty when nothing was held or sampled.
	Waves       recorder.Maybe `csv:"waves"`
	FullWaves   recorder.Maybe `csv:"full_waves"`
	WorkerSlots recorder.Maybe `csv:"worker_slots"`
	// FullSamples is how many of the HeldSamples found some worker with
	// every thread holding a long-poll: FullWorkerS counted in samples,
	// which a machine too loaded to sample on time does not shorten.
	// Empty with FullWorkerS.
	FullSamples recorder.Maybe `csv:"full_samples"`
}

func (Group) Schema() *recorder.Schema[Group] { return groupSchema }

var groupSchema = recorder.Tagged[Group](groupFile)

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
	RunID            string    `csv:"run_id"`
	Server           string    `csv:"server"`
	Hold             int       `csv:"hold"`
	ProbeConcurrency int       `csv:"probe_concurrency"`
	Rep              int       `csv:"rep"`
	StartedAt        time.Time `csv:"started_at"`
	Status           string    `csv:"status"`
	Reason           string    `csv:"reason"`
	Probes           int       `csv:"probes"`
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.Tagged[RunRow](runFile)

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
// over the successful probes' latencies, within 1/2048 of the exact one,
// which exactPercentiles then reads from probes.csv; the maximum exact),
// throughput as the successful probes over ElapsedS
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

// Summary is one long-poll condition over its runs (repetitions):
// in how many runs some worker was full, and in how many a probe took
// over a second, with the issue waves of all its runs.
type Summary struct {
	Server           string
	Hold, Probes     int
	Runs             int
	RunsFull         int // runs in which a worker was sampled full
	RunsOver1s       int // runs with a probe slower than 1 s
	Waves, FullWaves int // summed over the runs that counted them
	Sampled, Counted int // runs that sampled held long-polls, runs that counted waves
}

// Summarize groups a long-poll experiment's runs by condition
// (server, hold, probes), in order of first appearance.
func Summarize(groups []Group) []Summary {
	var out []Summary
	for _, g := range groups {
		i := slices.IndexFunc(out, func(s Summary) bool {
			return s.Server == g.Server && s.Hold == g.Hold && s.Probes == g.ProbeConcurrency
		})
		if i < 0 {
			i = len(out)
			out = append(out, Summary{Server: g.Server, Hold: g.Hold, Probes: g.ProbeConcurrency})
		}
		s := &out[i]
		s.Runs++
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
