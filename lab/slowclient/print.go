package slowclient

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Print implements lab.Result: the conditions table, then what sampling
// cost.
func (r *Result) Print(w io.Writer) {
	PrintConditions(w, r.Conditions, r.Runs)
	if note := lateGenerator(r.Runs); note != "" {
		fmt.Fprintf(w, "\n%s\n", note)
	}
	fmt.Fprintf(w, "\nresource sampling jitter: %s\n", r.SamplingJitter)
}

// LateLagMS is the schedule lag over which a run's /fast latencies are
// said to include the load generator's own delay.
const LateLagMS = 100

// lateGenerator says which conditions had ok runs whose load generator
// started a /fast request more than LateLagMS late (its own CPU, under
// its cgroup limit, can be what many slow readers exhaust), or "" when
// none did: their latencies measure the generator as well as the server.
func lateGenerator(runs []recorder.Run) string {
	var conds []string
	n, ok, worst := 0, 0, 0.0
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			continue
		}
		ok++
		if !r.MaxScheduleLagMS.Valid || r.MaxScheduleLagMS.Value <= LateLagMS {
			continue
		}
		n++
		worst = max(worst, r.MaxScheduleLagMS.Value)
		if c := fmt.Sprintf("%s %s %d slow", r.Route, r.Server, r.SlowClients); !slices.Contains(conds, c) {
			conds = append(conds, c)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("load generator behind schedule: in %d of %d ok runs a /fast request started over %d ms late (up to %.0f ms; "+
		"max_schedule_lag_ms and loadgen_throttled_ms in runs.csv), so their latencies include the generator's own delay: %s",
		n, ok, LateLagMS, worst, strings.Join(conds, ", "))
}

// PrintConditions writes the conditions table as aligned text, with two
// columns from the condition's ok runs: fast_ok, the /fast requests that
// succeeded of those scheduled (the percentiles are over the successful
// ones: a p95 of the survivors is no p95 of the schedule, so the table
// says how many there were), and the app's RSS peak (app_mem_mib is its
// cgroup's, page cache included; RSS is its processes' own).
func PrintConditions(w io.Writer, conds []recorder.Condition, runs []recorder.Run) {
	rows := [][]string{{"route", "server", "slow", "runs", "excluded", "fast_ok", "p50_ms", "p95_ms", "p95_min-max_ms", "app_send_s", "client_receive_s", "temp_peak_mib", "app_mem_mib", "app_rss_mib", "proxy_mem_mib"}}
	for _, c := range conds {
		rows = append(rows, []string{c.Route, c.Server, fmt.Sprint(c.SlowClients), fmt.Sprint(c.Runs), fmt.Sprint(c.RunsExcluded),
			fastOK(c, runs), lab.Num(c.P50MS, 1), lab.Num(c.P95MS, 1), spread(c),
			lab.Num(c.AppSendS, 2), lab.Num(c.ClientReceiveS, 2), lab.Num(c.TempPeakMiB, 1), lab.Num(c.AppMemoryPeakMiB, 1),
			lab.Num(appRSSPeak(c, runs), 1), lab.Num(c.ProxyMemoryPeakMiB, 1)})
	}
	lab.PrintTable(w, 2, rows)
}

// fastOK is "OK/TOTAL" /fast requests over the condition's ok runs, "-"
// without any.
func fastOK(c recorder.Condition, runs []recorder.Run) string {
	ok, total := 0, 0
	for _, r := range runs {
		if r.Route == c.Route && r.Server == c.Server && r.SlowClients == c.SlowClients && r.Status == recorder.RunOK {
			ok, total = ok+r.FastOK, total+r.FastTotal
		}
	}
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", ok, total)
}

// appRSSPeak is the largest app RSS peak, in MiB, of the condition's ok
// runs; nothing when none has one.
func appRSSPeak(c recorder.Condition, runs []recorder.Run) recorder.Maybe {
	var peak recorder.Maybe
	for _, r := range runs {
		rss := r.Components[0].RSSPeakBytes
		if r.Route != c.Route || r.Server != c.Server || r.SlowClients != c.SlowClients || r.Status != recorder.RunOK || !rss.Valid {
			continue
		}
		if mib := rss.Value / (1 << 20); !peak.Valid || mib > peak.Value {
			peak = recorder.Some(mib)
		}
	}
	return peak
}

// spread is the p95 range over the condition's runs, "-" without runs or
// without a p95 (no request succeeded).
func spread(c recorder.Condition) string {
	if c.Runs == 0 || lab.Num(c.P95MinMS, 1) == "-" {
		return "-"
	}
	return lab.Num(c.P95MinMS, 1) + "-" + lab.Num(c.P95MaxMS, 1)
}
