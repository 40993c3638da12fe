package slowclient

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
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

// PrintConditions writes the conditions table as aligned text.
func PrintConditions(w io.Writer, conds []recorder.Condition, runs []recorder.Run) {
	conditionsTable.WriteText(w, conditionRows(conds, runs))
}

// conditionRow is a row of the conditions table: a condition and two
// columns from its ok runs: the /fast requests that succeeded of those
// scheduled, sent or not (runs.csv fast_total; the percentiles are over
// the successful ones: a p95 of the survivors is no p95 of the schedule,
// so the table says how many there were), and the app's RSS peak (app_mem_mib is its cgroup's, page cache
// included; RSS is its processes' own).
type conditionRow struct {
	recorder.Condition
	fastOK, fastTotal int            // /fast requests of the ok runs: ok, all
	appRSSMiB         recorder.Maybe // the largest app RSS peak of an ok run
}

// conditionRows adds to each condition what its ok runs among runs say.
func conditionRows(conds []recorder.Condition, runs []recorder.Run) []conditionRow {
	rows := make([]conditionRow, len(conds))
	for i, c := range conds {
		rows[i].Condition = c
		for _, r := range runs {
			if r.Route != c.Route || r.Server != c.Server || r.SlowClients != c.SlowClients || r.Status != recorder.RunOK {
				continue
			}
			rows[i].fastOK, rows[i].fastTotal = rows[i].fastOK+r.FastOK, rows[i].fastTotal+r.FastTotal
			rss := r.Components[0].RSSPeakBytes
			if mib := rss.Value / (1 << 20); rss.Valid && (!rows[i].appRSSMiB.Valid || mib > rows[i].appRSSMiB.Value) {
				rows[i].appRSSMiB = recorder.Some(mib)
			}
		}
	}
	return rows
}

// notMeasured is the cell of a value that was not measured.
var notMeasured = report.Opt(recorder.None(), report.Sig)

// dec formats a value with decimals digits, "-" when not measured.
func dec(m recorder.Maybe, decimals int) report.Cell { return report.Opt(m, report.Decimals(decimals)) }

// conditionsTable is the conditions table, printed by the CLI and drawn
// in the report.
var conditionsTable = report.Table[conditionRow]{
	Caption: "Conditions (conditions.csv): runs are the condition's ok runs, excluded those that were not; fast_ok is the " +
		"/fast requests that succeeded of those scheduled (sent or not: runs.csv fast_total) over the ok runs; p50 and p95 are medians over the condition's ok runs " +
		"of each run's nearest-rank percentile of its /fast latencies; p95 min-max is their range over those runs; " +
		"app_send_s and client_receive_s are medians over runs of each run's median download; temp peak is the largest " +
		"total of the proxy's temp files seen in any of the runs; app and proxy memory are the most their cgroup held in " +
		"any of the runs (page cache included), or their peak RSS without a cgroup; app RSS is the largest peak RSS of the " +
		"app's processes in any of the runs.",
	Cols: []report.Column[conditionRow]{
		report.Col("route", func(c *conditionRow) report.Cell { return report.Text(c.Route) }),
		report.Col("server", func(c *conditionRow) report.Cell { return report.Text(c.Server) }),
		report.Col("slow", func(c *conditionRow) report.Cell { return report.Int(c.SlowClients) }),
		report.Col("runs", func(c *conditionRow) report.Cell { return report.Int(c.Runs) }),
		report.Col("excluded", func(c *conditionRow) report.Cell { return report.Int(c.RunsExcluded) }),
		report.Col("fast_ok", func(c *conditionRow) report.Cell {
			if c.fastTotal == 0 {
				return notMeasured
			}
			return report.Cell{Text: fmt.Sprintf("%d/%d", c.fastOK, c.fastTotal), Num: true}
		}),
		report.Col("p50_ms", func(c *conditionRow) report.Cell { return dec(c.P50MS, 1) }),
		report.Col("p95_ms", func(c *conditionRow) report.Cell { return dec(c.P95MS, 1) }),
		report.Col("p95_min-max_ms", func(c *conditionRow) report.Cell {
			if c.Runs == 0 || dec(c.P95MinMS, 1) == notMeasured {
				return notMeasured
			}
			return report.Cell{Text: dec(c.P95MinMS, 1).String() + "-" + dec(c.P95MaxMS, 1).String(), Num: true}
		}),
		report.Col("app_send_s", func(c *conditionRow) report.Cell { return dec(c.AppSendS, 2) }),
		report.Col("client_receive_s", func(c *conditionRow) report.Cell { return dec(c.ClientReceiveS, 2) }),
		report.Col("temp_peak_mib", func(c *conditionRow) report.Cell { return dec(c.TempPeakMiB, 1) }),
		report.Col("app_mem_mib", func(c *conditionRow) report.Cell { return dec(c.AppMemoryPeakMiB, 1) }),
		report.Col("app_rss_mib", func(c *conditionRow) report.Cell { return dec(c.appRSSMiB, 1) }),
		report.Col("proxy_mem_mib", func(c *conditionRow) report.Cell { return dec(c.ProxyMemoryPeakMiB, 1) }),
	},
}

// runsTable lists every run, whatever its status, in the report (folded:
// its Details are set where it is drawn).
var runsTable = report.Table[recorder.Run]{
	Caption: "Every run with its status; percentiles are nearest-rank over the run's ok /fast responses; " +
		"CPU is the component's average cores over the run.",
	Cols: []report.Column[recorder.Run]{
		report.Col("run", func(r *recorder.Run) report.Cell { return report.Text(r.RunID) }),
		report.Col("rep", func(r *recorder.Run) report.Cell { return report.Int(r.Rep) }),
		report.Col("status", func(r *recorder.Run) report.Cell { return report.Text(r.Status) }),
		report.Col("reason", func(r *recorder.Run) report.Cell { return report.Text(r.Reason) }),
		report.Col("/fast ok", func(r *recorder.Run) report.Cell { return report.Text(fmt.Sprintf("%d/%d", r.FastOK, r.FastTotal)) }),
		report.Col("p50 (ms)", func(r *recorder.Run) report.Cell { return report.Opt(r.P50MS, report.Sig) }),
		report.Col("p95 (ms)", func(r *recorder.Run) report.Cell { return report.Opt(r.P95MS, report.Sig) }),
		report.Col("max (ms)", func(r *recorder.Run) report.Cell { return report.Opt(r.MaxMS, report.Sig) }),
		report.Col("max lag (ms)", func(r *recorder.Run) report.Cell { return report.Opt(r.MaxScheduleLagMS, report.Sig) }),
		report.Col("app_send (s)", func(r *recorder.Run) report.Cell { return dec(r.AppSendS, 3) }),
		report.Col("client_receive (s)", func(r *recorder.Run) report.Cell { return dec(r.ClientReceiveS, 3) }),
		report.Col("temp peak (MiB)", func(r *recorder.Run) report.Cell { return dec(r.TempPeakMiB, 1) }),
		report.Col("app CPU", func(r *recorder.Run) report.Cell { return dec(r.Components[0].CPUCores, 3) }),
		report.Col("proxy CPU", func(r *recorder.Run) report.Cell { return dec(r.Components[1].CPUCores, 3) }),
	},
}
