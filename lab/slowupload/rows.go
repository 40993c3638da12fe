package slowupload

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	uploadFile = "uploads.csv"
	runFile    = "upload-runs.csv"
)

// Upload is one slow upload of the slow-upload experiment (uploads.csv).
// StartS is when its request header was sent, relative to the run's
// start; SendS how long the client took to hand the body to its socket
// (from the header to the last write returned, or to the write that
// failed); TotalS until the response was read or the upload failed.
// AppReadS is the app's time in body reads as it reported it
// (Server-Timing body;dur), AppBytes the bytes it said it read; both are
// empty when no answer of the app's arrived (a reset, a proxy's 502).
// Outcome is one of loadgen.UploadOK, UploadServerError, UploadStatus,
// UploadReset, UploadTimeout and UploadError.
type Upload struct {
	lab.ClientKey `csv:"clients=uploaders"`
	SizeBytes     int64          `csv:"size_bytes"`
	RateBps       int64          `csv:"rate_bps"`
	AppTimeoutS   recorder.Maybe `csv:"app_timeout_s,seconds"` // the app's timeout (Gunicorn --timeout), empty when the app's default
	StartS        float64        `csv:"start_s,seconds"`
	SendS         float64        `csv:"send_s,seconds"`
	TotalS        float64        `csv:"total_s,seconds"`
	SentBytes     int64          `csv:"sent_bytes"`
	Status        int            `csv:"status"`
	AppReadS      recorder.Maybe `csv:"app_read_s,seconds"`
	AppBytes      recorder.Maybe `csv:"app_bytes"`
	Outcome       string         `csv:"outcome"`
	Error         string         `csv:"error"`
}

func (Upload) Schema() *recorder.Schema[Upload] { return uploadSchema }

var uploadSchema = recorder.Tagged[Upload](uploadFile)

// RunRow is one row of upload-runs.csv: one run of the slow-upload
// experiment. The /fast columns are runs.csv's (recorder.SummarizeRun: nearest-rank
// percentiles of the ok requests). SendS and AppReadS are medians over the
// run's uploads that ended ok; the Uploads* columns count the uploads by
// outcome. WorkerTimeouts counts Gunicorn's "WORKER TIMEOUT" lines in the
// run's logs: workers its master killed for outliving --timeout (empty
// where no log was read). TempPeakMiB is the largest total of the proxy's
// open temp files sampled during the run (request bodies spooled to disk),
// AppMemMiB and ProxyMemMiB each component's memory peak
// (MemoryPeakMiB).
type RunRow struct {
	lab.RunKey  `csv:"clients=uploaders"`
	SizeBytes   int64          `csv:"size_bytes"`
	RateBps     int64          `csv:"rate_bps"`
	AppTimeoutS recorder.Maybe `csv:"app_timeout_s,seconds"`
	StartedAt   time.Time      `csv:"started_at"`
	Status      string         `csv:"status"`
	Reason      string         `csv:"reason"`
	recorder.FastFields
	SendS          recorder.Maybe `csv:"send_s,seconds"`
	AppReadS       recorder.Maybe `csv:"app_read_s,seconds"`
	UploadsOK      int            `csv:"uploads_ok"`
	Uploads5xx     int            `csv:"uploads_5xx"`
	UploadsReset   int            `csv:"uploads_reset"`
	UploadsTimeout int            `csv:"uploads_timeout"`
	UploadsOther   int            `csv:"uploads_other"`
	WorkerTimeouts recorder.Maybe `csv:"worker_timeouts"`
	TempPeakMiB    recorder.Maybe `csv:"temp_peak_mib,mib"`
	AppMemMiB      recorder.Maybe `csv:"app_mem_mib,mib"`
	ProxyMemMiB    recorder.Maybe `csv:"proxy_mem_mib,mib"`
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.Tagged[RunRow](runFile)

// SummarizeRun fills run's /fast columns from reqs (as recorder.SummarizeRun
// does) and its upload columns from uploads, which must all be the run's.
func SummarizeRun(run RunRow, reqs []recorder.Request, uploads []Upload) RunRow {
	run.SummarizeFast(reqs)
	var send, read []float64
	run.UploadsOK, run.Uploads5xx, run.UploadsReset, run.UploadsTimeout, run.UploadsOther = 0, 0, 0, 0, 0
	for _, u := range uploads {
		switch u.Outcome {
		case loadgen.UploadOK:
			run.UploadsOK++
			send = append(send, u.SendS)
			read = recorder.AppendValid(read, u.AppReadS)
		case loadgen.UploadServerError:
			run.Uploads5xx++
		case loadgen.UploadReset:
			run.UploadsReset++
		case loadgen.UploadTimeout:
			run.UploadsTimeout++
		default:
			run.UploadsOther++
		}
	}
	run.SendS, run.AppReadS = recorder.Some(recorder.Median(send)), recorder.Some(recorder.Median(read))
	return run
}

// condKey is a condition's columns (route, server, uploaders, size,
// rate, app timeout): its runs' group (Summarize).
type condKey struct {
	Route, Server      string
	Uploaders          int
	SizeBytes, RateBps int64
	AppTimeoutS        recorder.Maybe
}

// Summary is one condition of slow-upload over its ok runs: the
// printed table's row and the report's.
type Summary struct {
	condKey
	Runs, Excluded int
	// /fast: p50 and p95 the medians of the runs' values, and the range
	// of their p95.
	recorder.FastOver
	SendS, AppReadS        recorder.Maybe // medians of the runs' medians
	OK, Err5xx, Reset      int            // uploads by outcome, summed over the runs
	Timeout, Other         int
	WorkerTimeouts         recorder.Maybe // summed
	TempPeakMiB            recorder.Maybe // the largest
	AppMemMiB, ProxyMemMiB recorder.Maybe // the largest
}

// Summarize folds runs into one Summary per condition (condKey), in
// order of first appearance; runs that did not end ok count only in
// Excluded.
func Summarize(runs []RunRow) []Summary {
	key := func(r RunRow) condKey {
		return condKey{r.Route, r.Server, r.Clients, r.SizeBytes, r.RateBps, r.AppTimeoutS}
	}
	var rows []Summary
	for _, g := range recorder.GroupRuns(runs, key) {
		row := Summary{condKey: key(g.All[0]), Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK)}
		var send, read []float64
		var wt, temp, appMem, proxyMem []float64
		for _, r := range g.OK {
			send, read = recorder.AppendValid(send, r.SendS), recorder.AppendValid(read, r.AppReadS)
			wt, temp = recorder.AppendValid(wt, r.WorkerTimeouts), recorder.AppendValid(temp, r.TempPeakMiB)
			appMem, proxyMem = recorder.AppendValid(appMem, r.AppMemMiB), recorder.AppendValid(proxyMem, r.ProxyMemMiB)
			row.OK += r.UploadsOK
			row.Err5xx += r.Uploads5xx
			row.Reset += r.UploadsReset
			row.Timeout += r.UploadsTimeout
			row.Other += r.UploadsOther
		}
		row.SendS, row.AppReadS = recorder.Some(recorder.Median(send)), recorder.Some(recorder.Median(read))
		row.WorkerTimeouts = recorder.Sum(wt)
		row.TempPeakMiB = recorder.Some(recorder.NearestRank(temp, 100))
		row.AppMemMiB, row.ProxyMemMiB = recorder.Some(recorder.NearestRank(appMem, 100)), recorder.Some(recorder.NearestRank(proxyMem, 100))
		rows = append(rows, row)
	}
	return rows
}

// uploadRow is u as an uploads.csv row: row (the run's and condition's
// columns) with u's measurements, its start relative to t0.
func uploadRow(row Upload, t0 time.Time, u loadgen.Upload) Upload {
	row.Client, row.SendS, row.TotalS, row.SentBytes, row.Status, row.Outcome = u.Client, u.Send.Seconds(), u.Total.Seconds(), u.Sent, u.Status, u.Outcome
	if !u.Start.IsZero() {
		row.StartS = u.Start.Sub(t0).Seconds()
	}
	if u.AppReadOK {
		row.AppReadS = recorder.Some(u.AppRead.Seconds())
	}
	if u.AppBytesOK {
		row.AppBytes = recorder.Some(float64(u.AppBytes))
	}
	if u.Err != nil {
		row.Error = u.Err.Error()
	}
	return row
}

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}
