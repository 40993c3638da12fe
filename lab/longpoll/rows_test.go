package longpoll

import (
	"math"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// TestColumnsKeepLayout pins the long-poll files' columns: every
// column's name, place and precision (the layout is recorder's before the
// move, 26536c6).
func TestColumnsKeepLayout(t *testing.T) {
	for _, tc := range []struct{ file, got, want string }{
		{recorder.FileName[Probe](), recordertest.Layout[Probe](),
			"run_id/0 server/0 hold/0 probe_concurrency/0 worker/0 seq/0 start_s/3 connect_ms/3 ttfb_ms/3 latency_ms/3 status/0 bytes/0 error/0"},
		{recorder.FileName[Group](), recordertest.Layout[Group](),
			"run_id/0 server/0 hold/0 probe_concurrency/0 seconds/3 elapsed_s/3 ok/0 failed/0 p50_ms/3 p95_ms/3 max_ms/3 throughput_rps/3 slots/0 free_slots/0 " +
				"max_worker_held/0 full_worker_s/3 probes_over_1s/0 held_samples/0 waves/0 full_waves/0 worker_slots/0 full_samples/0"},
		{recorder.FileName[RunRow](), recordertest.Layout[RunRow](),
			"run_id/0 server/0 hold/0 probe_concurrency/0 rep/0 started_at/0 status/0 reason/0 probes/0"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.file, tc.got, tc.want)
		}
	}
}

// TestRowContract: probes.csv's, groups.csv's and longpoll-runs.csv's
// rows read back as written, and every field of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Probe](t)
	recordertest.Contract[Group](t)
	recordertest.Contract[RunRow](t)
}

func FuzzReadProbes(f *testing.F) { recordertest.FuzzRead[Probe](f) }
func FuzzReadGroups(f *testing.F) { recordertest.FuzzRead[Group](f) }
func FuzzReadRuns(f *testing.F)   { recordertest.FuzzRead[RunRow](f) }

// TestVerdictFields: RunRow's VerdictFields points at its own RunID,
// Status and Reason.
func TestVerdictFields(t *testing.T) {
	var r, zero RunRow
	id, status, reason := zero.VerdictFields(&r)
	*id, *status, *reason = "x.rep1", recorder.RunFailed, "why"
	if r.RunID != "x.rep1" || r.Status != recorder.RunFailed || r.Reason != "why" {
		t.Errorf("RunRow: VerdictFields set run_id %q, status %q, reason %q; want x.rep1, failed, why", r.RunID, r.Status, r.Reason)
	}
}

// Throughput is over the time the probing really took: probes that started
// in the window and ran past it stretch it.
func TestSummarizeProbesThroughputOverElapsed(t *testing.T) {
	g := Group{Seconds: 4, ElapsedS: 10, Slots: recorder.Some(2), Hold: 1}
	probes := []Probe{{Status: 200, LatencyMS: 5}, {Status: 200, LatencyMS: 9000}, {Status: 0, Error: "timeout"}, {Status: 204, LatencyMS: 1}}
	got := SummarizeProbes(g, probes)
	if got.OK != 3 || got.Failed != 1 || got.ProbesOver1s != 1 || got.ThroughputRPS != 0.3 || got.FreeSlots != recorder.Some(1) {
		t.Errorf("got %+v: want 3 ok, 1 failed, 1 over 1 s, 0.3 req/s over the 10 s elapsed", got)
	}
	if got := SummarizeProbes(Group{Seconds: 4}, probes); got.ThroughputRPS != 0 || got.FreeSlots.Valid {
		t.Errorf("no elapsed time, no slots: throughput %v, free slots %v; want 0 and empty", got.ThroughputRPS, got.FreeSlots)
	}
}

// A long-poll run's summary, streamed probe by probe, agrees with the
// nearest-rank percentiles of all its latencies kept (within the
// histogram's 1/2048; the maximum exactly) and counts what SummarizeProbes
// counted.
func TestProbeSummaryMatchesNearestRank(t *testing.T) {
	var s ProbeSummary
	var lat []float64
	for i := range 5000 {
		p := Probe{Status: 200, LatencyMS: 0.2 + float64((i*7919)%5000)*0.731}
		if i%97 == 0 {
			p = Probe{Status: 0, Error: "timeout", LatencyMS: 5000}
		} else {
			lat = append(lat, p.LatencyMS)
		}
		s.Add(p)
	}
	g := s.Group(Group{ElapsedS: 10})
	if g.OK != len(lat) || g.Failed != 5000-len(lat) {
		t.Errorf("ok %d failed %d, want %d and %d", g.OK, g.Failed, len(lat), 5000-len(lat))
	}
	for _, c := range []struct {
		got recorder.Maybe
		p   float64
	}{{g.P50MS, 50}, {g.P95MS, 95}} {
		want := recorder.NearestRank(lat, c.p)
		if math.Abs(c.got.Value-want)/want > 1.0/2048 {
			t.Errorf("p%v %v ms, want %v within 1/2048", c.p, c.got.Value, want)
		}
	}
	if want := recorder.NearestRank(lat, 100); math.Abs(g.MaxMS.Value-want) > 1e-6 {
		t.Errorf("max %v ms, want %v", g.MaxMS.Value, want)
	}
	if want := float64(len(lat)) / 10; g.ThroughputRPS != want {
		t.Errorf("throughput %v, want %v", g.ThroughputRPS, want)
	}
}

func TestCountWaves(t *testing.T) {
	// Holders issued at 0, re-issued at about 2, 4, 6, 8 (two holders,
	// a few ms apart); the window is [3, 7): the waves from 2, 4 and 6
	// are in effect during it. A worker was full at 4.5 and at 6.1.
	issues := []float64{0, 0.001, 2.01, 2.0, 4.0, 4.02, 6.0, 6.003, 8.0, 8.01}
	waves, full := CountWaves(issues, []float64{1, 4.5, 6.1, 7.5}, 3, 7, 0.5)
	if waves != 3 || full != 2 {
		t.Errorf("waves %d, full %d; want 3 and 2", waves, full)
	}
	if w, f := CountWaves(nil, nil, 0, 10, 0.5); w != 0 || f != 0 {
		t.Errorf("nothing held: %d, %d", w, f)
	}
	// The last wave lasts to the end of the window.
	if w, f := CountWaves([]float64{0}, []float64{9}, 2, 10, 0.5); w != 1 || f != 1 {
		t.Errorf("one wave for the whole window: %d, %d", w, f)
	}
}

func TestFisherExact(t *testing.T) {
	for _, tc := range []struct {
		a, b, c, d int
		want       float64
	}{
		// 6 of 16 runs against 1 of 16: the published comparison.
		{6, 10, 1, 15, 0.0833},
		// The tea-tasting table: 3 of 4 against 1 of 4.
		{3, 1, 1, 3, 0.4857},
		{0, 5, 5, 0, 0.0079},
		{2, 2, 2, 2, 1},
		{1, 0, 0, 0, 1},
	} {
		if got := FisherExact(tc.a, tc.b, tc.c, tc.d); math.Abs(got-tc.want) > 5e-4 {
			t.Errorf("FisherExact(%d, %d, %d, %d) = %.4f, want %.4f", tc.a, tc.b, tc.c, tc.d, got, tc.want)
		}
	}
	if p := FisherExact(0, 0, 0, 0); !math.IsNaN(p) {
		t.Errorf("empty table: %v, want NaN", p)
	}
}

func TestSummarizeAndCompare(t *testing.T) {
	g := func(server string, hold, probes int, over1s int, full recorder.Maybe, waves, fullWaves recorder.Maybe) Group {
		return Group{Server: server, Hold: hold, ProbeConcurrency: probes, ProbesOver1s: over1s, FullWorkerS: full,
			Waves: waves, FullWaves: fullWaves, OK: 10, ElapsedS: 2}
	}
	s, n := recorder.Some, recorder.None()
	var groups []Group
	// 16 runs with 20 probes, 6 of them with a probe over 1 s and a full
	// worker; 16 with 8 probes, 1 of them.
	for i := range 16 {
		hit := i < 6
		groups = append(groups, g("gthread-2x16", 20, 20, map[bool]int{true: 3}[hit], s(map[bool]float64{true: 12}[hit]), s(2), s(map[bool]float64{true: 1}[hit])))
	}
	for i := range 16 {
		hit := i < 1
		groups = append(groups, g("gthread-2x16", 20, 8, map[bool]int{true: 1}[hit], s(map[bool]float64{true: 12}[hit]), s(2), s(map[bool]float64{true: 1}[hit])))
	}
	groups = append(groups, g("sync-2", 2, 20, 40, n, n, n))
	sums := Summarize(groups)
	if len(sums) != 3 {
		t.Fatalf("%d conditions: %+v", len(sums), sums)
	}
	a, b, c := sums[0], sums[1], sums[2]
	if a.Runs != 16 || a.RunsOver1s != 6 || a.RunsFull != 6 || a.Sampled != 16 || a.Waves != 32 || a.FullWaves != 6 {
		t.Errorf("20 probes: %+v", a)
	}
	if b.Runs != 16 || b.RunsOver1s != 1 || b.RunsFull != 1 {
		t.Errorf("8 probes: %+v", b)
	}
	if c.Runs != 1 || c.Sampled != 0 || c.Counted != 0 || c.RunsOver1s != 1 {
		t.Errorf("sync-2: %+v", c)
	}
	cmp := Compare(sums)
	if len(cmp) != 1 || cmp[0].A.Probes != 20 || cmp[0].B.Probes != 8 {
		t.Fatalf("comparisons %+v: want 20 against 8 probes only", cmp)
	}
	if p := cmp[0].POver1s; math.Abs(p-0.0833) > 5e-4 {
		t.Errorf("p over 1 s = %.4f, want 0.0833", p)
	}
	if p := cmp[0].PFullRuns; math.Abs(p-0.0833) > 5e-4 {
		t.Errorf("p full = %.4f, want 0.0833", p)
	}
}

// SummarizeProbes is g, for the tests, with the figures of probes (ProbeSummary.Group).
func SummarizeProbes(g Group, probes []Probe) Group {
	var s ProbeSummary
	for _, p := range probes {
		s.Add(p)
	}
	return s.Group(g)
}
