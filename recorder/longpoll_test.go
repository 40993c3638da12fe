package recorder

import (
	"math"
	"strings"
	"testing"
)

// TestLongPollHeaders pins the long-poll files' columns.
func TestLongPollHeaders(t *testing.T) {
	for _, tc := range []struct {
		file, header, want string
	}{
		{FileName[Probe](), strings.Join(Header[Probe](), ","),
			"run_id,server,hold,probe_concurrency,worker,seq,start_s,connect_ms,ttfb_ms,latency_ms,status,bytes,error"},
		{FileName[LongPollGroup](), strings.Join(Header[LongPollGroup](), ","),
			"run_id,server,hold,probe_concurrency,seconds,elapsed_s,ok,failed,p50_ms,p95_ms,max_ms,throughput_rps,slots,free_slots," +
				"max_worker_held,full_worker_s,probes_over_1s,held_samples,waves,full_waves,worker_slots,full_samples"},
		{FileName[LongPollRun](), strings.Join(Header[LongPollRun](), ","),
			"run_id,server,hold,probe_concurrency,rep,started_at,status,reason,probes"},
	} {
		if tc.header != tc.want {
			t.Errorf("%s header\n got: %s\nwant: %s", tc.file, tc.header, tc.want)
		}
	}
}

// Throughput is over the time the probing really took: probes that started
// in the window and ran past it stretch it.
func TestSummarizeProbesThroughputOverElapsed(t *testing.T) {
	g := LongPollGroup{Seconds: 4, ElapsedS: 10, Slots: Some(2), Hold: 1}
	probes := []Probe{{Status: 200, LatencyMS: 5}, {Status: 200, LatencyMS: 9000}, {Status: 0, Error: "timeout"}, {Status: 204, LatencyMS: 1}}
	got := SummarizeProbes(g, probes)
	if got.OK != 3 || got.Failed != 1 || got.ProbesOver1s != 1 || got.ThroughputRPS != 0.3 || got.FreeSlots != Some(1) {
		t.Errorf("got %+v: want 3 ok, 1 failed, 1 over 1 s, 0.3 req/s over the 10 s elapsed", got)
	}
	if got := SummarizeProbes(LongPollGroup{Seconds: 4}, probes); got.ThroughputRPS != 0 || got.FreeSlots.Valid {
		t.Errorf("no elapsed time, no slots: throughput %v, free slots %v; want 0 and empty", got.ThroughputRPS, got.FreeSlots)
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

func TestSummarizeAndCompareLongPoll(t *testing.T) {
	g := func(server string, hold, probes int, over1s int, full Maybe, waves, fullWaves Maybe) LongPollGroup {
		return LongPollGroup{Server: server, Hold: hold, ProbeConcurrency: probes, ProbesOver1s: over1s, FullWorkerS: full,
			Waves: waves, FullWaves: fullWaves, OK: 10, ElapsedS: 2}
	}
	s, n := Some, None()
	var groups []LongPollGroup
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
	sums := SummarizeLongPoll(groups)
	if len(sums) != 3 {
		t.Fatalf("%d conditions: %+v", len(sums), sums)
	}
	a, b, c := sums[0], sums[1], sums[2]
	if a.Runs != 16 || a.RunsOver1s != 6 || a.RunsFull != 6 || a.Sampled != 16 || a.Waves != 32 || a.FullWaves != 6 || a.ProbesOK != 160 || a.Elapsed != 32 {
		t.Errorf("20 probes: %+v", a)
	}
	if b.Runs != 16 || b.RunsOver1s != 1 || b.RunsFull != 1 {
		t.Errorf("8 probes: %+v", b)
	}
	if c.Runs != 1 || c.Sampled != 0 || c.Counted != 0 || c.RunsOver1s != 1 {
		t.Errorf("sync-2: %+v", c)
	}
	cmp := CompareLongPoll(sums)
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
