package recorder

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// seq returns lo, lo+1, ..., hi shuffled, so tests do not rely on sorted input.
func seq(lo, hi int) []float64 {
	var vs []float64
	for v := lo; v <= hi; v++ {
		vs = append(vs, float64(v))
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
	return vs
}

func sameNumber(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func TestNearestRank(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		p      float64
		want   float64
	}{
		{"p95 of 72 values is the 69th smallest", seq(1, 72), 95, 69},
		{"p50 of 72 values is the 36th smallest", seq(1, 72), 50, 36},
		{"p100 of 72 values is the max", seq(1, 72), 100, 72},
		{"p50 of 1..10", seq(1, 10), 50, 5},
		{"p95 of 1..10", seq(1, 10), 95, 10},
		{"p1 of 1..10 is the min", seq(1, 10), 1, 1},
		{"p10 of 1..30 (0.1*30 is not 3 in floating point)", seq(1, 30), 10, 3},
		{"p99.9 of 1..1000", seq(1, 1000), 99.9, 999},
		{"p95 of 1..20", seq(1, 20), 95, 19},
		{"p95 of 1..100", seq(1, 100), 95, 95},
		{"tiny p is the min", seq(1, 5), 1e-9, 1},
		{"single value", []float64{4.2}, 95, 4.2},
		{"duplicates", []float64{3, 1, 3, 3, 2}, 50, 3},
		{"negative values", []float64{-1, -5, 2}, 50, -1},
		{"NaN values are skipped", []float64{nan, 3, 1, nan, 2}, 50, 2},
		{"only NaN", []float64{nan}, 50, nan},
		{"empty", nil, 95, nan},
		{"p = 0 is out of range", seq(1, 10), 0, nan},
		{"p > 100 is out of range", seq(1, 10), 100.5, nan},
		{"negative p", seq(1, 10), -5, nan},
		{"p NaN", seq(1, 10), nan, nan},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.values)
		if got := NearestRank(tt.values, tt.p); !sameNumber(got, tt.want) {
			t.Errorf("%s: NearestRank(p=%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
		if !slices.EqualFunc(in, tt.values, sameNumber) {
			t.Errorf("%s: NearestRank modified its input", tt.name)
		}
	}
}

func TestMedian(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"empty", nil, nan},
		{"one", []float64{7}, 7},
		{"odd", []float64{5, 1, 3}, 3},
		{"even is the mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"even with a long tail", []float64{1, 2, 1000, 3}, 2.5},
		{"1..10", seq(1, 10), 5.5},
		{"1..72", seq(1, 72), 36.5},
		{"negative", []float64{-3, -1}, -2},
		{"NaN values are skipped", []float64{nan, 3, 1}, 2},
		{"only NaN", []float64{nan, nan}, nan},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.values)
		if got := Median(tt.values); !sameNumber(got, tt.want) {
			t.Errorf("%s: Median = %v, want %v", tt.name, got, tt.want)
		}
		if !slices.EqualFunc(in, tt.values, sameNumber) {
			t.Errorf("%s: Median modified its input", tt.name)
		}
	}
}

func TestSummarizeRun(t *testing.T) {
	started := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	meta := RunMeta{RunID: "r1", Route: "direct", Server: "sync-2", SlowClients: 2, Rep: 3,
		StartedAt: started, Status: RunFailed, Reason: "app exited", FastPlanned: 11}
	reqs := []Request{
		{Seq: 0, Status: 200, LatencyMS: 10, ScheduleLagMS: 1},
		{Seq: 1, Status: 200, LatencyMS: 30, ScheduleLagMS: 0.5},
		{Seq: 2, Status: 0, LatencyMS: 5000, ScheduleLagMS: 7, Error: "timeout"}, // failed: no latency
		{Seq: 3, Status: 503, LatencyMS: 2, ScheduleLagMS: 0},                    // not 2xx/3xx
		{Seq: 4, Status: 200, LatencyMS: 20, ScheduleLagMS: 2},
		{Seq: 5, Status: 302, LatencyMS: 40, ScheduleLagMS: 0.25},
		{Seq: 6, Status: 200, LatencyMS: 1, ScheduleLagMS: 3, Error: "short body"}, // status ok but failed
		{Seq: 7, Status: 199, LatencyMS: 1, ScheduleLagMS: 3},
		{Seq: 8, Status: 400, LatencyMS: 1, ScheduleLagMS: 3},
		{Seq: 9, LatencyMS: math.NaN(), ScheduleLagMS: math.NaN(), Error: NotSentPrefix + ": interrupted"},
		{Seq: 10, LatencyMS: math.NaN(), ScheduleLagMS: math.NaN(), Error: NotSentPrefix + ": interrupted"},
	}
	larges := []LargeResponse{
		{Client: 0, ReceiveS: 8.25, AppSendS: Some(7.75), Outcome: DownloadComplete},
		{Client: 1, ReceiveS: 8.5, AppSendS: None(), Outcome: DownloadAppUnfinished},
		{Client: 2, ReceiveS: 8, AppSendS: Some(7.5), Outcome: DownloadComplete},
		{Client: 3, ReceiveS: 8.75, AppSendS: Some(8), Outcome: DownloadComplete},
		// Cut mid-way: its times measured something else.
		{Client: 4, ReceiveS: 0.5, AppSendS: Some(0.1), Outcome: DownloadShortBody},
		{Client: 5, ReceiveS: 0.01, Outcome: DownloadClientError},
	}
	// OK latencies 10, 30, 20, 40 -> sorted 10 20 30 40: p50 = 2nd (ceil 2),
	// p95 = 4th (ceil 3.8), max 40. Lag over the 9 sent rows: 7. Only the
	// complete downloads count: app_send_s median(7.75, 7.5, 8) = 7.75,
	// client_receive_s median(8.25, 8, 8.75) = 8.25.
	want := Run{
		RunID: "r1", Route: "direct", Server: "sync-2", SlowClients: 2, Rep: 3,
		StartedAt: started, Status: RunFailed, Reason: "app exited",
		FastTotal: 11, FastOK: 4, FastPlanned: 11, FastSent: 9,
		P50MS: Some(20), P95MS: Some(40), MaxMS: Some(40), MaxScheduleLagMS: Some(7),
		AppSendS: Some(7.75), ClientReceiveS: Some(8.25),
	}
	if got := SummarizeRun(meta, reqs, larges); got != want {
		t.Errorf("SummarizeRun\n got: %+v\nwant: %+v", got, want)
	}

	// 72 ok requests with latencies 1..72 ms: p50 36, p95 69, max 72.
	reqs = reqs[:0]
	for i, v := range seq(1, 72) {
		reqs = append(reqs, Request{Seq: i, Status: 200, LatencyMS: v, ScheduleLagMS: v / 100})
	}
	got := SummarizeRun(meta, reqs, nil)
	if got.FastTotal != 72 || got.FastOK != 72 || got.FastSent != 72 || got.P50MS != Some(36) || got.P95MS != Some(69) ||
		got.MaxMS != Some(72) || got.MaxScheduleLagMS != Some(0.72) {
		t.Errorf("72 requests: %+v", got)
	}
	if got.AppSendS.Valid || got.ClientReceiveS.Valid {
		t.Errorf("no downloads, yet app_send_s %v, client_receive_s %v", got.AppSendS, got.ClientReceiveS)
	}
}

func TestSummarizeRunNothingMeasured(t *testing.T) {
	meta := RunMeta{RunID: "r1", Status: RunAborted, Reason: "host CPU above 90%"}
	want := Run{RunID: "r1", Status: RunAborted, Reason: "host CPU above 90%"}
	if got := SummarizeRun(meta, nil, nil); got != want {
		t.Errorf("no rows\n got: %+v\nwant: %+v (all None, counts 0)", got, want)
	}

	// Every request failed: no latency, but the lag and counts are known;
	// downloads without app timing keep client_receive_s only.
	reqs := []Request{
		{Status: 0, Error: "connection refused", LatencyMS: math.NaN(), ScheduleLagMS: 1.5},
		{Status: 0, Error: "connection refused", LatencyMS: math.NaN(), ScheduleLagMS: math.NaN()},
	}
	larges := []LargeResponse{{ReceiveS: 2, Outcome: DownloadComplete}, {ReceiveS: 3, Outcome: DownloadComplete}}
	want = Run{RunID: "r1", Status: RunAborted, Reason: "host CPU above 90%",
		FastTotal: 2, FastSent: 2, MaxScheduleLagMS: Some(1.5), ClientReceiveS: Some(2.5)}
	if got := SummarizeRun(meta, reqs, larges); got != want {
		t.Errorf("all failed\n got: %+v\nwant: %+v", got, want)
	}
}

func TestSummarizeConditions(t *testing.T) {
	run := func(route, server string, slow int, status string, p50, p95, app, recv, temp Maybe) Run {
		return Run{Route: route, Server: server, SlowClients: slow, Status: status,
			P50MS: p50, P95MS: p95, AppSendS: app, ClientReceiveS: recv, TempPeakMiB: temp}
	}
	const d, on, g = "direct", "proxy-buffering-on", "gthread-1x4"
	s, n := Some, None()
	runs := []Run{
		run(d, "sync-2", 0, RunOK, s(2), s(4), s(0.125), s(8), n),           // A
		run(d, "sync-2", 2, RunOK, s(100), s(3000), s(7.875), s(8.25), n),   // B
		run(d, "sync-2", 0, RunOK, s(3), s(6), s(0.375), s(8.5), n),         // C
		run(d, "sync-2", 0, RunFailed, s(999), s(999), s(9), s(9), s(9)),    // excluded
		run(on, "sync-2", 2, RunOK, s(1.5), s(5), s(0.0625), s(8), s(32.5)), // E
		run(d, "sync-2", 0, RunOK, s(4), s(5), n, s(8.25), n),               // F
		run(d, "sync-2", 2, RunAborted, s(1), s(1), s(1), s(1), s(1)),       // excluded
		run(on, "sync-2", 2, RunOK, n, n, s(0.125), s(8.5), s(30)),          // H: no ok requests
		run(d, g, 2, RunFailed, s(2), s(3), s(0.1), s(8), n),                // only failed: counted, no values
		run(on, "sync-2", 1, RunOK, n, n, n, n, n),                          // nothing measured
	}
	want := []Condition{
		// A, C, F: p50 median(2,3,4) = 3; p95 median(4,6,5) = 5, min 4, max 6;
		// app_send_s median(0.125, 0.375) = 0.25 (F has none); receive median(8, 8.5, 8.25).
		{Route: d, Server: "sync-2", SlowClients: 0, Runs: 3, RunsExcluded: 1, P50MS: s(3), P95MS: s(5), P95MinMS: s(4), P95MaxMS: s(6),
			AppSendS: s(0.25), ClientReceiveS: s(8.25)},
		{Route: d, Server: "sync-2", SlowClients: 2, Runs: 1, RunsExcluded: 1, P50MS: s(100), P95MS: s(3000), P95MinMS: s(3000), P95MaxMS: s(3000),
			AppSendS: s(7.875), ClientReceiveS: s(8.25)},
		// E, H: H has no latencies, so p50/p95 come from E alone; temp is the larger peak.
		{Route: on, Server: "sync-2", SlowClients: 2, Runs: 2, P50MS: s(1.5), P95MS: s(5), P95MinMS: s(5), P95MaxMS: s(5),
			AppSendS: s(0.09375), ClientReceiveS: s(8.25), TempPeakMiB: s(32.5)},
		{Route: d, Server: g, SlowClients: 2, Runs: 0, RunsExcluded: 1},
		{Route: on, Server: "sync-2", SlowClients: 1, Runs: 1},
	}
	// Memory: the app's cgroup peak of E (40 MiB) and H (48 MiB) gives 48;
	// the proxy ran without a cgroup in E (RSS 20 MiB) and with one in H
	// (64 MiB, temp files' page cache included): 64. A failed run's 900
	// MiB does not count.
	mib := func(v float64) Maybe { return s(v * (1 << 20)) }
	runs[4].Components[0].MemoryPeakBytes, runs[4].Components[1].RSSPeakBytes = mib(40), mib(20)
	runs[7].Components[0].MemoryPeakBytes, runs[7].Components[1].MemoryPeakBytes = mib(48), mib(64)
	runs[3].Components[0].MemoryPeakBytes = mib(900)
	want[2].AppMemoryPeakMiB, want[2].ProxyMemoryPeakMiB = s(48), s(64)
	got := SummarizeConditions(runs)
	if len(got) != len(want) {
		t.Fatalf("got %d conditions, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("condition %d\n got: %+v\nwant: %+v", i, got[i], want[i])
		}
	}
	if got := SummarizeConditions(nil); len(got) != 0 {
		t.Errorf("SummarizeConditions(nil) = %+v, want none", got)
	}
}

// GroupRuns keeps each condition's first appearance and its runs' order,
// and splits off the runs that did not end ok.
func TestGroupRuns(t *testing.T) {
	runs := []Run{
		{RunID: "a1", Route: "direct", Status: RunOK},
		{RunID: "b1", Route: "proxy", Status: RunFailed},
		{RunID: "a2", Route: "direct", Status: RunFailed},
		{RunID: "b2", Route: "proxy", Status: RunOK},
		{RunID: "a3", Route: "direct", Status: RunOK},
	}
	ids := func(rs []Run) (out []string) {
		for _, r := range rs {
			out = append(out, r.RunID)
		}
		return out
	}
	got := GroupRuns(runs, func(r Run) string { return r.Route })
	if len(got) != 2 {
		t.Fatalf("%d groups, want 2", len(got))
	}
	want := []struct{ all, ok []string }{{[]string{"a1", "a2", "a3"}, []string{"a1", "a3"}}, {[]string{"b1", "b2"}, []string{"b2"}}}
	for i, w := range want {
		if !slices.Equal(ids(got[i].All), w.all) || !slices.Equal(ids(got[i].OK), w.ok) || got[i].Excluded() != len(w.all)-len(w.ok) {
			t.Errorf("group %d: all %v ok %v excluded %d; want %v, %v", i, ids(got[i].All), ids(got[i].OK), got[i].Excluded(), w.all, w.ok)
		}
	}
	if g := GroupRuns([]Run(nil), func(r Run) string { return r.Route }); len(g) != 0 {
		t.Errorf("no runs: %d groups", len(g))
	}
}

func TestSum(t *testing.T) {
	if got := Sum(nil); got.Valid {
		t.Errorf("Sum(nil) = %v, want None", got)
	}
	if got := Sum([]float64{1, 2.5, 0}); got != Some(3.5) {
		t.Errorf("Sum = %v, want 3.5", got)
	}
}
