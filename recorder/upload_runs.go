package recorder

import (
	"slices"
	"time"
)

// UploadRun is one row of upload-runs.csv: one run of the slow-upload
// experiment. The /fast columns are runs.csv's (SummarizeRun: nearest-rank
// percentiles of the ok requests). SendS and AppReadS are medians over the
// run's uploads that ended ok; the Uploads* columns count the uploads by
// outcome. WorkerTimeouts counts Gunicorn's "WORKER TIMEOUT" lines in the
// run's logs: workers its master killed for outliving --timeout (empty
// where no log was read). TempPeakMiB is the largest total of the proxy's
// open temp files sampled during the run (request bodies spooled to disk),
// AppMemMiB and ProxyMemMiB each component's memory peak
// (MemoryPeakMiB).
type UploadRun struct {
	RunID, Route, Server         string
	Uploaders, Rep               int
	SizeBytes, RateBps           int64
	AppTimeoutS                  Maybe
	StartedAt                    time.Time
	Status, Reason               string
	FastPlanned, FastSent        int
	FastTotal, FastOK            int
	P50MS, P95MS, MaxMS          Maybe
	SendS, AppReadS              Maybe
	UploadsOK, Uploads5xx        int
	UploadsReset, UploadsTimeout int
	UploadsOther                 int
	WorkerTimeouts               Maybe
	TempPeakMiB                  Maybe
	AppMemMiB, ProxyMemMiB       Maybe
}

func (UploadRun) Schema() *Schema[UploadRun] { return &uploadRunSchema }

var uploadRunSchema = Schema[UploadRun]{file: "upload-runs.csv", cols: slices.Concat(
	[]Column[UploadRun]{
		Col("run_id", 0, func(r *UploadRun) any { return &r.RunID }),
		Col("route", 0, func(r *UploadRun) any { return &r.Route }),
		Col("server", 0, func(r *UploadRun) any { return &r.Server }),
		Col("uploaders", 0, func(r *UploadRun) any { return &r.Uploaders }),
		Col("rep", 0, func(r *UploadRun) any { return &r.Rep }),
		Col("size_bytes", whole, func(r *UploadRun) any { return &r.SizeBytes }),
		Col("rate_bps", whole, func(r *UploadRun) any { return &r.RateBps }),
		Col("app_timeout_s", msOfS, func(r *UploadRun) any { return &r.AppTimeoutS }),
	},
	StatusCols(func(r *UploadRun) RunStatus { return RunStatus{&r.StartedAt, &r.Status, &r.Reason} }),
	FastCols(func(r *UploadRun) FastRun {
		return FastRun{&r.FastPlanned, &r.FastSent, &r.FastTotal, &r.FastOK, &r.P50MS, &r.P95MS, &r.MaxMS}
	}),
	[]Column[UploadRun]{
		Col("send_s", msOfS, func(r *UploadRun) any { return &r.SendS }),
		Col("app_read_s", msOfS, func(r *UploadRun) any { return &r.AppReadS }),
		Col("uploads_ok", 0, func(r *UploadRun) any { return &r.UploadsOK }),
		Col("uploads_5xx", 0, func(r *UploadRun) any { return &r.Uploads5xx }),
		Col("uploads_reset", 0, func(r *UploadRun) any { return &r.UploadsReset }),
		Col("uploads_timeout", 0, func(r *UploadRun) any { return &r.UploadsTimeout }),
		Col("uploads_other", 0, func(r *UploadRun) any { return &r.UploadsOther }),
		Col("worker_timeouts", whole, func(r *UploadRun) any { return &r.WorkerTimeouts }),
		Col("temp_peak_mib", kibOfMi, func(r *UploadRun) any { return &r.TempPeakMiB }),
		Col("app_mem_mib", kibOfMi, func(r *UploadRun) any { return &r.AppMemMiB }),
		Col("proxy_mem_mib", kibOfMi, func(r *UploadRun) any { return &r.ProxyMemMiB }),
	},
)}

// SummarizeUploadRun fills run's /fast columns from reqs (as SummarizeRun
// does) and its upload columns from uploads, which must all be the run's.
func SummarizeUploadRun(run UploadRun, reqs []Request, uploads []Upload) UploadRun {
	fast := SummarizeRun(RunMeta{FastPlanned: run.FastPlanned}, reqs, nil)
	run.FastSent, run.FastTotal, run.FastOK = fast.FastSent, fast.FastTotal, fast.FastOK
	run.P50MS, run.P95MS, run.MaxMS = fast.P50MS, fast.P95MS, fast.MaxMS
	var send, read []float64
	run.UploadsOK, run.Uploads5xx, run.UploadsReset, run.UploadsTimeout, run.UploadsOther = 0, 0, 0, 0, 0
	for _, u := range uploads {
		switch u.Outcome {
		case UploadOK:
			run.UploadsOK++
			send = append(send, u.SendS)
			if u.AppReadS.Valid {
				read = append(read, u.AppReadS.Value)
			}
		case UploadServerError:
			run.Uploads5xx++
		case UploadReset:
			run.UploadsReset++
		case UploadTimeout:
			run.UploadsTimeout++
		default:
			run.UploadsOther++
		}
	}
	run.SendS, run.AppReadS = Some(Median(send)), Some(Median(read))
	return run
}

// UploadConditions groups runs by condition (route, server, uploaders,
// size, rate, app timeout), in order of first appearance.
func UploadConditions(runs []UploadRun) [][]UploadRun {
	type key struct {
		route, server string
		uploaders     int
		size, rate    int64
		timeout       Maybe
	}
	var keys []key
	groups := map[key][]UploadRun{}
	for _, r := range runs {
		k := key{r.Route, r.Server, r.Uploaders, r.SizeBytes, r.RateBps, r.AppTimeoutS}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([][]UploadRun, 0, len(keys))
	for _, k := range keys {
		out = append(out, groups[k])
	}
	return out
}

// UploadCondition is one condition of slow-upload over its ok runs: the
// printed table's row and the report's.
type UploadCondition struct {
	Route, Server          string
	Uploaders              int
	SizeBytes              int64
	AppTimeoutS            Maybe
	Runs, Excluded         int
	P50MS, P95MS           Maybe // medians of the runs' values
	P95MinMS, P95MaxMS     Maybe
	SendS, AppReadS        Maybe // medians of the runs' medians
	OK, Err5xx, Reset      int   // uploads by outcome, summed over the runs
	Timeout, Other         int
	WorkerTimeouts         Maybe // summed
	TempPeakMiB            Maybe // the largest
	AppMemMiB, ProxyMemMiB Maybe // the largest
}

// SummarizeUploadConditions folds runs into one UploadCondition per
// condition (UploadConditions), in order of first
// appearance; runs that did not end ok count only in Excluded.
func SummarizeUploadConditions(runs []UploadRun) []UploadCondition {
	var rows []UploadCondition
	for _, g := range UploadConditions(runs) {
		first := g[0]
		row := UploadCondition{Route: first.Route, Server: first.Server, Uploaders: first.Uploaders, SizeBytes: first.SizeBytes, AppTimeoutS: first.AppTimeoutS}
		var p50, p95, send, read []float64
		var wt, temp, appMem, proxyMem []float64
		for _, r := range g {
			if r.Status != RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			p50, p95 = AppendValid(p50, r.P50MS), AppendValid(p95, r.P95MS)
			send, read = AppendValid(send, r.SendS), AppendValid(read, r.AppReadS)
			wt, temp = AppendValid(wt, r.WorkerTimeouts), AppendValid(temp, r.TempPeakMiB)
			appMem, proxyMem = AppendValid(appMem, r.AppMemMiB), AppendValid(proxyMem, r.ProxyMemMiB)
			row.OK += r.UploadsOK
			row.Err5xx += r.Uploads5xx
			row.Reset += r.UploadsReset
			row.Timeout += r.UploadsTimeout
			row.Other += r.UploadsOther
		}
		row.P50MS, row.P95MS = Some(Median(p50)), Some(Median(p95))
		if len(p95) > 0 {
			row.P95MinMS, row.P95MaxMS = Some(slices.Min(p95)), Some(slices.Max(p95))
		}
		row.SendS, row.AppReadS = Some(Median(send)), Some(Median(read))
		if len(wt) > 0 {
			sum := 0.0
			for _, v := range wt {
				sum += v
			}
			row.WorkerTimeouts = Some(sum)
		}
		row.TempPeakMiB = Some(NearestRank(temp, 100))
		row.AppMemMiB, row.ProxyMemMiB = Some(NearestRank(appMem, 100)), Some(NearestRank(proxyMem, 100))
		rows = append(rows, row)
	}
	return rows
}
