package recorder

import (
	"slices"
	"time"
)

// StalledRun is one row of stalled-runs.csv: one run of the
// stalled-reader experiment. The /fast columns are runs.csv's
// (SummarizeRun: nearest-rank percentiles of the ok requests). The
// outcome and ender columns count the run's downloads (StalledOutcomes,
// StalledEnders); BytesMedian is the median of their received bytes.
// WorkerTimeouts counts the app's "WORKER TIMEOUT" log lines (Gunicorn's
// master killing a worker that outlived --timeout; the embedded sync
// model logs the same), empty where no log was read. AppHeldS is the
// longest the app held a worker on a download: its longest app_send_s,
// or the app timeout when a worker was killed (which leaves no record).
type StalledRun struct {
	RunID, Route, Server       string
	Mode                       string
	Clients, Rep               int
	SizeBytes, RateBps         int64
	AppTimeoutS, SendTimeoutS  Maybe
	StallS, GiveUpS            float64
	StartedAt                  time.Time
	Status, Reason             string
	FastPlanned, FastSent      int
	FastTotal, FastOK          int
	P50MS, P95MS, MaxMS        Maybe
	Complete, Truncated, Reset int
	Timeout, Other             int
	ByClient, ByAppTimeout     int
	BySendTimeout, ByUnknown   int
	BytesMedian                Maybe
	WorkerTimeouts             Maybe
	AppHeldS                   Maybe
}

func (StalledRun) Schema() *Schema[StalledRun] { return &stalledRunSchema }

var stalledRunSchema = Schema[StalledRun]{file: "stalled-runs.csv", cols: slices.Concat(
	[]Column[StalledRun]{
		Col("run_id", 0, func(r *StalledRun) any { return &r.RunID }),
		Col("route", 0, func(r *StalledRun) any { return &r.Route }),
		Col("server", 0, func(r *StalledRun) any { return &r.Server }),
		Col("mode", 0, func(r *StalledRun) any { return &r.Mode }),
		Col("clients", 0, func(r *StalledRun) any { return &r.Clients }),
		Col("rep", 0, func(r *StalledRun) any { return &r.Rep }),
		Col("size_bytes", whole, func(r *StalledRun) any { return &r.SizeBytes }),
		Col("rate_bps", whole, func(r *StalledRun) any { return &r.RateBps }),
		Col("app_timeout_s", msOfS, func(r *StalledRun) any { return &r.AppTimeoutS }),
		Col("send_timeout_s", msOfS, func(r *StalledRun) any { return &r.SendTimeoutS }),
		Col("stall_s", msOfS, func(r *StalledRun) any { return &r.StallS }),
		Col("give_up_s", msOfS, func(r *StalledRun) any { return &r.GiveUpS }),
	},
	StatusCols(func(r *StalledRun) RunStatus { return RunStatus{&r.StartedAt, &r.Status, &r.Reason} }),
	FastCols(func(r *StalledRun) FastRun {
		return FastRun{&r.FastPlanned, &r.FastSent, &r.FastTotal, &r.FastOK, &r.P50MS, &r.P95MS, &r.MaxMS}
	}),
	[]Column[StalledRun]{
		Col("complete", 0, func(r *StalledRun) any { return &r.Complete }),
		Col("truncated", 0, func(r *StalledRun) any { return &r.Truncated }),
		Col("reset", 0, func(r *StalledRun) any { return &r.Reset }),
		Col("timeout", 0, func(r *StalledRun) any { return &r.Timeout }),
		Col("other", 0, func(r *StalledRun) any { return &r.Other }),
		Col("by_client", 0, func(r *StalledRun) any { return &r.ByClient }),
		Col("by_app_timeout", 0, func(r *StalledRun) any { return &r.ByAppTimeout }),
		Col("by_send_timeout", 0, func(r *StalledRun) any { return &r.BySendTimeout }),
		Col("by_unknown", 0, func(r *StalledRun) any { return &r.ByUnknown }),
		Col("bytes_median", whole, func(r *StalledRun) any { return &r.BytesMedian }),
		Col("worker_timeouts", whole, func(r *StalledRun) any { return &r.WorkerTimeouts }),
		Col("app_held_s", msOfS, func(r *StalledRun) any { return &r.AppHeldS }),
	},
)}

// SummarizeStalledRun fills run's /fast columns from reqs (as SummarizeRun
// does) and its download columns from downloads, which must all be the
// run's. AppHeldS needs WorkerTimeouts and AppTimeoutS set first.
func SummarizeStalledRun(run StalledRun, reqs []Request, downloads []StalledDownload) StalledRun {
	fast := SummarizeRun(RunMeta{FastPlanned: run.FastPlanned}, reqs, nil)
	run.FastSent, run.FastTotal, run.FastOK = fast.FastSent, fast.FastTotal, fast.FastOK
	run.P50MS, run.P95MS, run.MaxMS = fast.P50MS, fast.P95MS, fast.MaxMS
	run.Complete, run.Truncated, run.Reset, run.Timeout, run.Other = 0, 0, 0, 0, 0
	run.ByClient, run.ByAppTimeout, run.BySendTimeout, run.ByUnknown = 0, 0, 0, 0
	var bytes, held []float64
	for _, d := range downloads {
		switch d.Outcome {
		case StalledComplete:
			run.Complete++
		case StalledTruncated:
			run.Truncated++
		case StalledReset:
			run.Reset++
		case StalledTimeout:
			run.Timeout++
		default:
			run.Other++
		}
		switch d.EndedBy {
		case EndedByNone:
		case EndedByClient:
			run.ByClient++
		case EndedByAppTimeout:
			run.ByAppTimeout++
		case EndedBySendTimeout:
			run.BySendTimeout++
		default:
			run.ByUnknown++
		}
		bytes = append(bytes, float64(d.Bytes))
		if d.AppSendS.Valid {
			held = append(held, d.AppSendS.Value)
		}
	}
	run.BytesMedian = Some(Median(bytes))
	if run.WorkerTimeouts.Valid && run.WorkerTimeouts.Value > 0 && run.AppTimeoutS.Valid {
		held = append(held, run.AppTimeoutS.Value)
	}
	run.AppHeldS = Some(NearestRank(held, 100))
	return run
}

// StalledCondition is one condition of stalled-reader over its ok runs:
// the printed table's row and the report's.
type StalledCondition struct {
	Route, Server              string
	Mode                       string
	Clients                    int
	SizeBytes, RateBps         int64
	AppTimeoutS, SendTimeoutS  Maybe
	StallS                     float64
	Runs, Excluded             int
	P50MS, P95MS               Maybe // medians of the runs' values
	FastOK, FastTotal          int   // summed
	Complete, Truncated, Reset int   // downloads by outcome, summed
	Timeout, Other             int
	ByClient, ByAppTimeout     int // downloads by ender, summed
	BySendTimeout, ByUnknown   int
	BytesMedian                Maybe // median of the runs' medians
	WorkerTimeouts             Maybe // summed
	AppHeldS                   Maybe // median of the runs' values
}

// SummarizeStalledConditions folds runs into one StalledCondition per
// condition (route, server, mode, clients, size, rate, timeouts, stall),
// in order of first appearance; runs that did not end ok count only in
// Excluded.
func SummarizeStalledConditions(runs []StalledRun) []StalledCondition {
	type key struct {
		route, server, mode string
		clients             int
		size, rate          int64
		app, send           Maybe
		stall               float64
	}
	var keys []key
	groups := map[key][]StalledRun{}
	for _, r := range runs {
		k := key{r.Route, r.Server, r.Mode, r.Clients, r.SizeBytes, r.RateBps, r.AppTimeoutS, r.SendTimeoutS, r.StallS}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows []StalledCondition
	for _, k := range keys {
		row := StalledCondition{Route: k.route, Server: k.server, Mode: k.mode, Clients: k.clients, SizeBytes: k.size, RateBps: k.rate,
			AppTimeoutS: k.app, SendTimeoutS: k.send, StallS: k.stall}
		var p50, p95, bytes, wt, held []float64
		for _, r := range groups[k] {
			if r.Status != RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			p50, p95 = AppendValid(p50, r.P50MS), AppendValid(p95, r.P95MS)
			bytes, wt, held = AppendValid(bytes, r.BytesMedian), AppendValid(wt, r.WorkerTimeouts), AppendValid(held, r.AppHeldS)
			row.FastOK += r.FastOK
			row.FastTotal += r.FastTotal
			row.Complete += r.Complete
			row.Truncated += r.Truncated
			row.Reset += r.Reset
			row.Timeout += r.Timeout
			row.Other += r.Other
			row.ByClient += r.ByClient
			row.ByAppTimeout += r.ByAppTimeout
			row.BySendTimeout += r.BySendTimeout
			row.ByUnknown += r.ByUnknown
		}
		row.P50MS, row.P95MS, row.BytesMedian, row.AppHeldS = Some(Median(p50)), Some(Median(p95)), Some(Median(bytes)), Some(Median(held))
		if len(wt) > 0 {
			sum := 0.0
			for _, v := range wt {
				sum += v
			}
			row.WorkerTimeouts = Some(sum)
		}
		rows = append(rows, row)
	}
	return rows
}
