package recorder

import "time"

// LongPollGroup is one run of a long-poll condition (groups.csv).
type LongPollGroup struct {
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
	P50MS, P95MS  Maybe
	MaxMS         Maybe
	ThroughputRPS float64 // OK probes per second of ElapsedS
	// Slots is how many requests the server works on at once (workers x
	// threads, or worker connections), FreeSlots the slots minus the held
	// long-polls (may be negative) and WorkerSlots one worker's share:
	// all empty for a server whose concurrency its size does not bound
	// (an event loop: Uvicorn, Node.js).
	Slots, FreeSlots Maybe
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
	Waves, FullWaves Maybe
	WorkerSlots      Maybe
	// FullSamples is how many of the HeldSamples found some worker with
	// every thread holding a long-poll: FullWorkerS counted in samples,
	// which a machine too loaded to sample on time does not shorten.
	// Empty with FullWorkerS.
	FullSamples Maybe
}

func (LongPollGroup) Schema() *Schema[LongPollGroup] { return &longPollGroupSchema }

var longPollGroupSchema = Schema[LongPollGroup]{file: "groups.csv", cols: []Column[LongPollGroup]{
	Col("run_id", 0, func(r *LongPollGroup) any { return &r.RunID }),
	Col("server", 0, func(r *LongPollGroup) any { return &r.Server }),
	Col("hold", 0, func(r *LongPollGroup) any { return &r.Hold }),
	Col("probe_concurrency", 0, func(r *LongPollGroup) any { return &r.ProbeConcurrency }),
	Col("seconds", msOfS, func(r *LongPollGroup) any { return &r.Seconds }),
	Col("elapsed_s", msOfS, func(r *LongPollGroup) any { return &r.ElapsedS }),
	Col("ok", 0, func(r *LongPollGroup) any { return &r.OK }),
	Col("failed", 0, func(r *LongPollGroup) any { return &r.Failed }),
	Col("p50_ms", usOfMS, func(r *LongPollGroup) any { return &r.P50MS }),
	Col("p95_ms", usOfMS, func(r *LongPollGroup) any { return &r.P95MS }),
	Col("max_ms", usOfMS, func(r *LongPollGroup) any { return &r.MaxMS }),
	Col("throughput_rps", milli, func(r *LongPollGroup) any { return &r.ThroughputRPS }),
	Col("slots", 0, func(r *LongPollGroup) any { return &r.Slots }),
	Col("free_slots", 0, func(r *LongPollGroup) any { return &r.FreeSlots }),
	Col("max_worker_held", 0, func(r *LongPollGroup) any { return &r.MaxWorkerHeld }),
	Col("full_worker_s", msOfS, func(r *LongPollGroup) any { return &r.FullWorkerS }),
	Col("probes_over_1s", 0, func(r *LongPollGroup) any { return &r.ProbesOver1s }),
	Col("held_samples", 0, func(r *LongPollGroup) any { return &r.HeldSamples }),
	Col("waves", 0, func(r *LongPollGroup) any { return &r.Waves }),
	Col("full_waves", 0, func(r *LongPollGroup) any { return &r.FullWaves }),
	Col("worker_slots", 0, func(r *LongPollGroup) any { return &r.WorkerSlots }),
	Col("full_samples", 0, func(r *LongPollGroup) any { return &r.FullSamples }),
}}

// ProbeSummary is a long-poll run's probes summarized as they are
// measured: counts and a bounded latency histogram, so a run's memory does
// not grow with its probes (a closed loop against a fast server sends
// thousands a second). The zero value is empty and ready.
type ProbeSummary struct {
	ok, failed, over1s int
	lat                DurationHist // successful probes' latencies
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
func (s *ProbeSummary) Group(g LongPollGroup) LongPollGroup {
	g.OK, g.Failed, g.ProbesOver1s = s.ok, s.failed, s.over1s
	g.P50MS, g.P95MS, g.MaxMS = Some(s.lat.Percentile(50)), Some(s.lat.Percentile(95)), Some(s.lat.Percentile(100))
	g.ThroughputRPS = 0
	if g.ElapsedS > 0 {
		g.ThroughputRPS = float64(g.OK) / g.ElapsedS
	}
	g.FreeSlots = Maybe{}
	if g.Slots.Valid {
		g.FreeSlots = Some(g.Slots.Value - float64(g.Hold))
	}
	return g
}

// SummarizeProbes is g with the figures of probes (ProbeSummary.Group).
func SummarizeProbes(g LongPollGroup, probes []Probe) LongPollGroup {
	var s ProbeSummary
	for _, p := range probes {
		s.Add(p)
	}
	return s.Group(g)
}
