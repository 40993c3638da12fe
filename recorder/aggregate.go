package recorder

import (
	"math"
	"slices"
	"time"
)

// NearestRank returns the p-th percentile of values by the nearest-rank
// method: the ceil(p/100*n)-th smallest of the n values, so p95 of 72 values
// is the 69th smallest and p100 is the maximum. NaN values are not
// measurements and are skipped. It returns NaN when there are no values or
// p is outside (0, 100]. values is not modified.
func NearestRank(values []float64, p float64) float64 {
	if !(p > 0 && p <= 100) {
		return math.NaN()
	}
	s := sortedNumbers(values)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[Rank(len(s), p)-1]
}

// Rank is NearestRank's rank of the p-th percentile (0 < p <= 100) of n
// values, n at least 1: ceil(p/100*n), from 1 to n. A caller that streams
// sorted values picks the Rank-th.
func Rank(n int, p float64) int {
	// p*n/100 is exact for integer p; the small slack keeps a p that is not
	// exactly representable (such as 99.9) from pushing the rank one up.
	rank := int(math.Ceil(p*float64(n)/100 - 1e-9))
	return max(1, min(rank, n))
}

// Median returns the middle value of values, or the mean of the middle two
// for an even count. NaN values are skipped; it returns NaN when there are
// no values. values is not modified.
func Median(values []float64) float64 {
	s := sortedNumbers(values)
	n := len(s)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// sortedNumbers returns a sorted copy of values without NaNs.
func sortedNumbers(values []float64) []float64 {
	s := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return s
}

// RunMeta identifies a run and says how it ended; lab knows these, the
// measurements do not. FastPlanned is how many /fast requests its
// schedule had.
type RunMeta struct {
	RunID, Route, Server string
	SlowClients, Rep     int
	Shard                int // requests.csv's shard
	StartedAt            time.Time
	Status, Reason       string
	FastPlanned          int
}

// OKRequest reports whether r counts toward the latency percentiles: a
// response arrived with a 2xx or 3xx status and nothing failed.
func OKRequest(r Request) bool {
	return r.Status >= 200 && r.Status <= 399 && r.Error == ""
}

// SummarizeRun summarizes one run's /fast requests and slow downloads, all
// of which must belong to that run. Latency percentiles cover the ok
// requests only (a failed request has no latency worth ranking; FastOK <
// FastTotal shows it); schedule lag covers every request that was sent.
// app_send_s and client_receive_s are medians over the complete downloads
// only: a cut or failed download measured something else. TempPeakMiB and
// Components are left None for the resource sampler to fill in.
func SummarizeRun(meta RunMeta, reqs []Request, larges []LargeResponse) Run {
	run := Run{
		RunID: meta.RunID, Route: meta.Route, Server: meta.Server,
		SlowClients: meta.SlowClients, Rep: meta.Rep, StartedAt: meta.StartedAt,
		Status: meta.Status, Reason: meta.Reason,
		FastTotal: len(reqs), FastPlanned: meta.FastPlanned,
	}
	latencies := make([]float64, 0, len(reqs))
	lags := make([]float64, 0, len(reqs))
	for _, r := range reqs {
		if r.NotSent() {
			continue
		}
		run.FastSent++
		lags = append(lags, r.ScheduleLagMS)
		if OKRequest(r) {
			run.FastOK++
			latencies = append(latencies, r.LatencyMS)
		}
	}
	run.P50MS = Some(NearestRank(latencies, 50))
	run.P95MS = Some(NearestRank(latencies, 95))
	run.MaxMS = Some(NearestRank(latencies, 100))
	run.MaxScheduleLagMS = Some(NearestRank(lags, 100))

	var appSend, receive []float64
	for _, l := range larges {
		if l.Outcome != DownloadComplete {
			continue
		}
		appSend = AppendValid(appSend, l.AppSendS)
		receive = append(receive, l.ReceiveS)
	}
	run.AppSendS = Some(Median(appSend))
	run.ClientReceiveS = Some(Median(receive))
	return run
}

// SummarizeConditions summarizes the runs with Status RunOK per (route,
// server, slow clients), in order of each condition's first appearance;
// the other runs are counted in RunsExcluded (a condition with no ok run
// still has its row, with every value None).
// p50_ms and p95_ms are medians of the runs' values, p95_min_ms and
// p95_max_ms their extremes, app_send_s and client_receive_s medians of
// the runs' medians, temp_peak_mib the largest peak. Runs missing a value
// do not count toward that column; a column no run has is None.
func SummarizeConditions(runs []Run) []Condition {
	type key struct {
		route, server string
		slowClients   int
	}
	groups := GroupRuns(runs, func(r Run) key { return key{r.Route, r.Server, r.SlowClients} })
	conds := make([]Condition, len(groups))
	for i, c := range groups {
		g, first := c.OK, c.All[0]
		p95 := valid(g, func(r Run) Maybe { return r.P95MS })
		conds[i] = Condition{
			Route: first.Route, Server: first.Server, SlowClients: first.SlowClients,
			Runs: len(g), RunsExcluded: c.Excluded(),
			P50MS:              Some(Median(valid(g, func(r Run) Maybe { return r.P50MS }))),
			P95MS:              Some(Median(p95)),
			P95MinMS:           Some(minimum(p95)),
			P95MaxMS:           Some(NearestRank(p95, 100)),
			AppSendS:           Some(Median(valid(g, func(r Run) Maybe { return r.AppSendS }))),
			ClientReceiveS:     Some(Median(valid(g, func(r Run) Maybe { return r.ClientReceiveS }))),
			TempPeakMiB:        Some(NearestRank(valid(g, func(r Run) Maybe { return r.TempPeakMiB }), 100)),
			AppMemoryPeakMiB:   Some(NearestRank(valid(g, func(r Run) Maybe { return MemoryPeakMiB(r.Components[0]) }), 100)),
			ProxyMemoryPeakMiB: Some(NearestRank(valid(g, func(r Run) Maybe { return MemoryPeakMiB(r.Components[1]) }), 100)),
		}
	}
	return conds
}

// MemoryPeakMiB is a component's cgroup memory peak in MiB, else its
// RSS peak, else nothing.
func MemoryPeakMiB(c ComponentSummary) Maybe {
	switch {
	case c.MemoryPeakBytes.Valid:
		return Some(c.MemoryPeakBytes.Value / (1 << 20))
	case c.RSSPeakBytes.Valid:
		return Some(c.RSSPeakBytes.Value / (1 << 20))
	}
	return Maybe{}
}

// minimum returns the smallest non-NaN value, or NaN when there is none.
func minimum(values []float64) float64 {
	s := sortedNumbers(values)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[0]
}

// valid returns the valid values of one Maybe column of runs.
func valid(runs []Run, get func(Run) Maybe) []float64 {
	var vs []float64
	for _, r := range runs {
		vs = AppendValid(vs, get(r))
	}
	return vs
}

// ConditionRuns are one condition's runs (GroupRuns): all of them in
// order, and those whose status is RunOK.
type ConditionRuns[R any] struct {
	All, OK []R
}

// Excluded is how many of the condition's runs did not end ok.
func (c ConditionRuns[R]) Excluded() int { return len(c.All) - len(c.OK) }

// GroupRuns groups runs by condition, the comparable key of each run's
// condition columns, in order of each condition's first run; a group's
// runs keep their order.
func GroupRuns[R RunRow[R], K comparable](runs []R, key func(R) K) []ConditionRuns[R] {
	var out []ConditionRuns[R]
	at := map[K]int{}
	for _, r := range runs {
		k := key(r)
		i, seen := at[k]
		if !seen {
			i, at[k] = len(out), len(out)
			out = append(out, ConditionRuns[R]{})
		}
		out[i].All = append(out[i].All, r)
		if _, status, _ := r.VerdictFields(&r); *status == RunOK {
			out[i].OK = append(out[i].OK, r)
		}
	}
	return out
}

// Sum is the sum of values, None when there are none.
func Sum(values []float64) Maybe {
	if len(values) == 0 {
		return None()
	}
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	return Some(sum)
}
