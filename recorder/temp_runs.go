package recorder

import "time"

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
// on device)"; the embedded proxy logs the same).
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
}

func (TempRun) schema() *schema[TempRun] { return &tempRunSchema }

var tempRunSchema = schema[TempRun]{file: "temp-runs.csv", cols: []column[TempRun]{
	col("run_id", 0, func(r *TempRun) any { return &r.RunID }),
	col("route", 0, func(r *TempRun) any { return &r.Route }),
	col("server", 0, func(r *TempRun) any { return &r.Server }),
	col("slow_clients", 0, func(r *TempRun) any { return &r.SlowClients }),
	col("rep", 0, func(r *TempRun) any { return &r.Rep }),
	col("size_bytes", whole, func(r *TempRun) any { return &r.SizeBytes }),
	col("max_temp_file_bytes", whole, func(r *TempRun) any { return &r.MaxTempFileBytes }),
	col("temp_tmpfs_bytes", whole, func(r *TempRun) any { return &r.TempTmpfsBytes }),
	col("started_at", 0, func(r *TempRun) any { return &r.StartedAt }),
	col("status", 0, func(r *TempRun) any { return &r.Status }),
	col("reason", 0, func(r *TempRun) any { return &r.Reason }),
	col("fast_planned", 0, func(r *TempRun) any { return &r.FastPlanned }),
	col("fast_sent", 0, func(r *TempRun) any { return &r.FastSent }),
	col("fast_total", 0, func(r *TempRun) any { return &r.FastTotal }),
	col("fast_ok", 0, func(r *TempRun) any { return &r.FastOK }),
	col("p50_ms", usOfMS, func(r *TempRun) any { return &r.P50MS }),
	col("p95_ms", usOfMS, func(r *TempRun) any { return &r.P95MS }),
	col("max_ms", usOfMS, func(r *TempRun) any { return &r.MaxMS }),
	col("app_send_s", msOfS, func(r *TempRun) any { return &r.AppSendS }),
	col("receive_s", msOfS, func(r *TempRun) any { return &r.ReceiveS }),
	col("downloads_complete", 0, func(r *TempRun) any { return &r.DownloadsComplete }),
	col("downloads_cut", 0, func(r *TempRun) any { return &r.DownloadsCut }),
	col("bytes_min", whole, func(r *TempRun) any { return &r.BytesMin }),
	col("temp_peak_mib", kibOfMi, func(r *TempRun) any { return &r.TempPeakMiB }),
	col("temp_fs_avail_min_mib", kibOfMi, func(r *TempRun) any { return &r.TempFSAvailMinMiB }),
	col("proxy_errors", 0, func(r *TempRun) any { return &r.ProxyErrors }),
	col("app_mem_mib", kibOfMi, func(r *TempRun) any { return &r.AppMemMiB }),
	col("proxy_mem_mib", kibOfMi, func(r *TempRun) any { return &r.ProxyMemMiB }),
}}

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
