package tempcliff

import (
	"slices"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// runFile is the results file of the rows this package declares; each
// download's row is recorder's large-responses.csv (downloadFile).
const runFile = "temp-runs.csv"

var downloadFile = recorder.FileName[recorder.LargeResponse]()

// RunRow is one row of temp-runs.csv: one run of temp-cliff or
// temp-disk-full (slow readers of SizeBytes behind a buffering proxy
// whose proxy_max_temp_file_size is MaxTempFileBytes, 0 = memory buffers
// only, and whose temp dir is a tmpfs of TempTmpfsBytes, 0 = none).
// The /fast columns are runs.csv's (recorder.SummarizeRun). AppSendS is
// the median of the downloads' app_send_s (the app's time to write the
// response); ReceiveS the median receive time of the complete downloads;
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
// external stack; or when it could not be scraped, which the run's
// progress says, as it says how many temp-fs scrapes failed).
type RunRow struct {
	RunID            string    `csv:"run_id"`
	Route            string    `csv:"route"`
	Server           string    `csv:"server"`
	SlowClients      int       `csv:"slow_clients"`
	Rep              int       `csv:"rep"`
	SizeBytes        int64     `csv:"size_bytes"`
	MaxTempFileBytes int64     `csv:"max_temp_file_bytes"`
	TempTmpfsBytes   int64     `csv:"temp_tmpfs_bytes"`
	StartedAt        time.Time `csv:"started_at"`
	Status           string    `csv:"status"`
	Reason           string    `csv:"reason"`
	recorder.FastFields
	AppSendS          recorder.Maybe `csv:"app_send_s,seconds"`
	ReceiveS          recorder.Maybe `csv:"receive_s,seconds"`
	DownloadsComplete int            `csv:"downloads_complete"`
	DownloadsCut      int            `csv:"downloads_cut"`
	BytesMin          int64          `csv:"bytes_min"`
	TempPeakMiB       recorder.Maybe `csv:"temp_peak_mib,mib"`
	TempFSAvailMinMiB recorder.Maybe `csv:"temp_fs_avail_min_mib,mib"`
	ProxyErrors       int            `csv:"proxy_errors"`
	AppMemMiB         recorder.Maybe `csv:"app_mem_mib,mib"`
	ProxyMemMiB       recorder.Maybe `csv:"proxy_mem_mib,mib"`
	// Appended last, so older files' columns keep their places.
	ExporterTempWriteErrors recorder.Maybe `csv:"exporter_temp_write_errors"`
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.Tagged[RunRow](runFile)

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}

// SummarizeRun fills run's /fast columns from reqs (as recorder.SummarizeRun
// does) and its download columns from larges, which must all be the run's.
func SummarizeRun(run RunRow, reqs []recorder.Request, larges []recorder.LargeResponse) RunRow {
	run.SummarizeFast(reqs)
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
	run.AppSendS, run.ReceiveS = recorder.Some(recorder.Median(send)), recorder.Some(recorder.Median(recv))
	return run
}

// Summary is one condition of temp-cliff or temp-disk-full over its ok
// runs: the printed table's row and the report's.
type Summary struct {
	Server                                      string
	SlowClients                                 int
	SizeBytes, MaxTempFileBytes, TempTmpfsBytes int64
	Runs, Excluded                              int
	// /fast: requests ok summed, p50 and p95 the medians of the runs'
	// values, and the range of their p95.
	recorder.FastOver
	FastTotal                           int            // summed
	AppSendS, ReceiveS                  recorder.Maybe // medians of the runs' medians
	Complete, Cut                       int            // downloads, summed
	BytesMinMiB                         recorder.Maybe // the fewest over the runs
	TempPeakMiB, ProxyMemMiB, AppMemMiB recorder.Maybe // the largest
	TempFSAvailMinMiB                   recorder.Maybe // the least
	ProxyErrors                         int            // summed
	ExporterTempWriteErrors             recorder.Maybe // summed over the runs that have it
}

// condKey identifies a condition: server, slow clients, size, max temp
// file size and tmpfs.
type condKey struct {
	server        string
	slow          int
	size, max, fs int64
}

func runKey(r RunRow) condKey {
	return condKey{r.Server, r.SlowClients, r.SizeBytes, r.MaxTempFileBytes, r.TempTmpfsBytes}
}

// Summarize folds runs into one Summary per condition (server, slow
// clients, size, max temp file size, tmpfs), in order of first
// appearance; runs that did not end ok count only in Excluded.
func Summarize(runs []RunRow) []Summary {
	var out []Summary
	for _, g := range recorder.GroupRuns(runs, runKey) {
		k := runKey(g.All[0])
		row := Summary{Server: k.server, SlowClients: k.slow, SizeBytes: k.size, MaxTempFileBytes: k.max, TempTmpfsBytes: k.fs,
			Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK)}
		var send, recv, bmin, temp, pmem, amem, avail, twe []float64
		for _, r := range g.OK {
			row.FastTotal += r.FastTotal
			send, recv = recorder.AppendValid(send, r.AppSendS), recorder.AppendValid(recv, r.ReceiveS)
			temp, avail = recorder.AppendValid(temp, r.TempPeakMiB), recorder.AppendValid(avail, r.TempFSAvailMinMiB)
			pmem, amem = recorder.AppendValid(pmem, r.ProxyMemMiB), recorder.AppendValid(amem, r.AppMemMiB)
			bmin = append(bmin, float64(r.BytesMin)/(1<<20))
			row.Complete += r.DownloadsComplete
			row.Cut += r.DownloadsCut
			row.ProxyErrors += r.ProxyErrors
			twe = recorder.AppendValid(twe, r.ExporterTempWriteErrors)
		}
		row.AppSendS, row.ReceiveS = recorder.Some(recorder.Median(send)), recorder.Some(recorder.Median(recv))
		if len(bmin) > 0 {
			row.BytesMinMiB = recorder.Some(slices.Min(bmin))
		}
		if len(avail) > 0 {
			row.TempFSAvailMinMiB = recorder.Some(slices.Min(avail))
		}
		row.ExporterTempWriteErrors = recorder.Sum(twe)
		row.TempPeakMiB = recorder.Some(recorder.NearestRank(temp, 100))
		row.ProxyMemMiB, row.AppMemMiB = recorder.Some(recorder.NearestRank(pmem, 100)), recorder.Some(recorder.NearestRank(amem, 100))
		out = append(out, row)
	}
	return out
}
