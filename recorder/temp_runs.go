package recorder

import (
	"slices"
	"time"
)

// TempRun is one row of temp-runs.csv: one run of the temp-cliff or
// temp-disk-full experiment (slow readers of SizeBytes behind a buffering
// proxy whose proxy_max_temp_file_size is MaxTempFileBytes, 0 = memory
// buffers only, and whose temp dir is a tmpfs of TempTmpfsBytes, 0 = none).
// The /fast columns are runs.csv's (SummarizeRun). AppSendS is the median
// of the downloads' app_send_s (the app's time to write the response);
// ReceiveS the median receive time of the complete downloads;
// DownloadsComplete and DownloadsCut count the downloads by how they
// ended (large-responses.csv has each), BytesMin the fewest bytes one
// received. TempPeakMiB is the proxy's open temp files at their largest,
// TempFSAvailMinMiB the least space the exporter saw available on the
// temp dir's filesystem (slowlab_proxy_temp_fs_avail_bytes; empty when
// it reported none), ProxyErrors the lines at error level or worse in
// the proxy's log (NGINX's "[crit] pwrite() ... failed (28: No space left
// on device)"; the embedded proxy logs the same). ExporterTempWriteErrors
// is the exporter's slowlab_proxy_temp_write_errors_total for the proxy at
// the run's end: the failed temp-file writes it read in the proxy's error
// log while the run lasted (empty when it reported none: no proxy log, an
// external stack).
type TempRun struct {
	RunID, Route, Server   string
	SlowClients, Rep       int
	SizeBytes              int64
	MaxTempFileBytes       int64
	TempTmpfsBytes         int64
	StartedAt              time.Time
	Status, Reason         string
	FastPlanned, FastSent  int
	FastTotal, FastOK      int
	P50MS, P95MS, MaxMS    Maybe
	AppSendS, ReceiveS     Maybe
	DownloadsComplete      int
	DownloadsCut           int
	BytesMin               int64
	TempPeakMiB            Maybe
	TempFSAvailMinMiB      Maybe
	ProxyErrors            int
	AppMemMiB, ProxyMemMiB Maybe
	// Appended last, so older files' columns keep their places.
	ExporterTempWriteErrors Maybe
}

func (TempRun) Schema() *Schema[TempRun] { return &tempRunSchema }

var tempRunSchema = Schema[TempRun]{file: "temp-runs.csv", cols: slices.Concat(
	[]Column[TempRun]{
		Col("run_id", 0, func(r *TempRun) any { return &r.RunID }),
		Col("route", 0, func(r *TempRun) any { return &r.Route }),
		Col("server", 0, func(r *TempRun) any { return &r.Server }),
		Col("slow_clients", 0, func(r *TempRun) any { return &r.SlowClients }),
		Col("rep", 0, func(r *TempRun) any { return &r.Rep }),
		Col("size_bytes", whole, func(r *TempRun) any { return &r.SizeBytes }),
		Col("max_temp_file_bytes", whole, func(r *TempRun) any { return &r.MaxTempFileBytes }),
		Col("temp_tmpfs_bytes", whole, func(r *TempRun) any { return &r.TempTmpfsBytes }),
	},
	StatusCols(func(r *TempRun) RunStatus { return RunStatus{&r.StartedAt, &r.Status, &r.Reason} }),
	FastCols(func(r *TempRun) FastRun {
		return FastRun{&r.FastPlanned, &r.FastSent, &r.FastTotal, &r.FastOK, &r.P50MS, &r.P95MS, &r.MaxMS}
	}),
	[]Column[TempRun]{
		Col("app_send_s", msOfS, func(r *TempRun) any { return &r.AppSendS }),
		Col("receive_s", msOfS, func(r *TempRun) any { return &r.ReceiveS }),
		Col("downloads_complete", 0, func(r *TempRun) any { return &r.DownloadsComplete }),
		Col("downloads_cut", 0, func(r *TempRun) any { return &r.DownloadsCut }),
		Col("bytes_min", whole, func(r *TempRun) any { return &r.BytesMin }),
		Col("temp_peak_mib", kibOfMi, func(r *TempRun) any { return &r.TempPeakMiB }),
		Col("temp_fs_avail_min_mib", kibOfMi, func(r *TempRun) any { return &r.TempFSAvailMinMiB }),
		Col("proxy_errors", 0, func(r *TempRun) any { return &r.ProxyErrors }),
		Col("app_mem_mib", kibOfMi, func(r *TempRun) any { return &r.AppMemMiB }),
		Col("proxy_mem_mib", kibOfMi, func(r *TempRun) any { return &r.ProxyMemMiB }),
		Col("exporter_temp_write_errors", whole, func(r *TempRun) any { return &r.ExporterTempWriteErrors }),
	},
)}

// SummarizeTempRun fills run's /fast columns from reqs and its download
// columns from larges, which must all be the run's.
func SummarizeTempRun(run TempRun, reqs []Request, larges []LargeResponse) TempRun {
	fast := SummarizeRun(RunMeta{FastPlanned: run.FastPlanned}, reqs, nil)
	run.FastSent, run.FastTotal, run.FastOK = fast.FastSent, fast.FastTotal, fast.FastOK
	run.P50MS, run.P95MS, run.MaxMS = fast.P50MS, fast.P95MS, fast.MaxMS
	var send, recv []float64
	run.DownloadsComplete, run.DownloadsCut, run.BytesMin = 0, 0, 0
	for i, l := range larges {
		if l.AppSendS.Valid {
			send = append(send, l.AppSendS.Value)
		}
		if l.Complete {
			run.DownloadsComplete++
			recv = append(recv, l.ReceiveS)
		} else {
			run.DownloadsCut++
		}
		if i == 0 || l.Bytes < run.BytesMin {
			run.BytesMin = l.Bytes
		}
	}
	run.AppSendS, run.ReceiveS = Some(Median(send)), Some(Median(recv))
	return run
}

// TempCondition is one condition of temp-cliff or temp-disk-full over its
// ok runs: the printed table's row and the report's.
type TempCondition struct {
	Server                                      string
	SlowClients                                 int
	SizeBytes, MaxTempFileBytes, TempTmpfsBytes int64
	Runs, Excluded                              int
	FastOK, FastTotal                           int   // summed
	P50MS, P95MS                                Maybe // medians of the runs' values
	P95MinMS, P95MaxMS                          Maybe
	AppSendS, ReceiveS                          Maybe // medians of the runs' medians
	Complete, Cut                               int   // downloads, summed
	BytesMinMiB                                 Maybe // the fewest over the runs
	TempPeakMiB, ProxyMemMiB, AppMemMiB         Maybe // the largest
	TempFSAvailMinMiB                           Maybe // the least
	ProxyErrors                                 int   // summed
	ExporterTempWriteErrors                     Maybe // summed over the runs that have it
}

// SummarizeTempConditions folds runs into one TempCondition per condition
// (server, slow clients, size, max temp file size, tmpfs), in order of
// first appearance; runs that did not end ok count only in Excluded.
func SummarizeTempConditions(runs []TempRun) []TempCondition {
	type key struct {
		server        string
		slow          int
		size, max, fs int64
	}
	var keys []key
	groups := map[key][]TempRun{}
	for _, r := range runs {
		k := key{r.Server, r.SlowClients, r.SizeBytes, r.MaxTempFileBytes, r.TempTmpfsBytes}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []TempCondition
	for _, k := range keys {
		row := TempCondition{Server: k.server, SlowClients: k.slow, SizeBytes: k.size, MaxTempFileBytes: k.max, TempTmpfsBytes: k.fs}
		var p50, p95, send, recv, bmin, temp, pmem, amem, avail, twe []float64
		for _, r := range groups[k] {
			if r.Status != RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			row.FastOK += r.FastOK
			row.FastTotal += r.FastTotal
			p50, p95 = AppendValid(p50, r.P50MS), AppendValid(p95, r.P95MS)
			send, recv = AppendValid(send, r.AppSendS), AppendValid(recv, r.ReceiveS)
			temp, avail = AppendValid(temp, r.TempPeakMiB), AppendValid(avail, r.TempFSAvailMinMiB)
			pmem, amem = AppendValid(pmem, r.ProxyMemMiB), AppendValid(amem, r.AppMemMiB)
			bmin = append(bmin, float64(r.BytesMin)/(1<<20))
			row.Complete += r.DownloadsComplete
			row.Cut += r.DownloadsCut
			row.ProxyErrors += r.ProxyErrors
			twe = AppendValid(twe, r.ExporterTempWriteErrors)
		}
		row.P50MS, row.P95MS = Some(Median(p50)), Some(Median(p95))
		if len(p95) > 0 {
			row.P95MinMS, row.P95MaxMS = Some(slices.Min(p95)), Some(slices.Max(p95))
		}
		row.AppSendS, row.ReceiveS = Some(Median(send)), Some(Median(recv))
		if len(bmin) > 0 {
			row.BytesMinMiB = Some(slices.Min(bmin))
		}
		if len(avail) > 0 {
			row.TempFSAvailMinMiB = Some(slices.Min(avail))
		}
		if len(twe) > 0 {
			sum := 0.0
			for _, v := range twe {
				sum += v
			}
			row.ExporterTempWriteErrors = Some(sum)
		}
		row.TempPeakMiB = Some(NearestRank(temp, 100))
		row.ProxyMemMiB, row.AppMemMiB = Some(NearestRank(pmem, 100)), Some(NearestRank(amem, 100))
		out = append(out, row)
	}
	return out
}
