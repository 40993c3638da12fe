package slowupload

import (
	"testing"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

func TestSummarizeRun(t *testing.T) {
	reqs := []recorder.Request{{LatencyMS: 2, Status: 200}, {LatencyMS: 4000, Status: 200}, {LatencyMS: 1, Status: 0, Error: "reset"}}
	uploads := []Upload{
		{Outcome: loadgen.UploadOK, SendS: 3, AppReadS: recorder.Some(2.9)},
		{Outcome: loadgen.UploadOK, SendS: 5, AppReadS: recorder.Some(0.1)},
		{Outcome: loadgen.UploadOK, SendS: 4}, // no Server-Timing: left out of app_read_s
		{Outcome: loadgen.UploadReset}, {Outcome: loadgen.UploadServerError}, {Outcome: loadgen.UploadTimeout}, {Outcome: loadgen.UploadError}, {Outcome: loadgen.UploadStatus},
	}
	r := SummarizeRun(RunRow{RunKey: lab.RunKey{RunID: "x"}, FastFields: recorder.FastFields{FastPlanned: 3}}, reqs, uploads)
	if r.FastTotal != 3 || r.FastOK != 2 || r.FastSent != 3 || r.P50MS != recorder.Some(2) || r.P95MS != recorder.Some(4000) {
		t.Errorf("fast columns: %+v", r)
	}
	if r.SendS != recorder.Some(4) || r.AppReadS != recorder.Some(1.5) {
		t.Errorf("send %v, app read %v; want the medians 4 and 1.5 of the ok uploads", r.SendS, r.AppReadS)
	}
	if r.UploadsOK != 3 || r.UploadsReset != 1 || r.Uploads5xx != 1 || r.UploadsTimeout != 1 || r.UploadsOther != 2 {
		t.Errorf("outcomes: %+v", r)
	}
	if none := SummarizeRun(RunRow{}, nil, []Upload{{Outcome: loadgen.UploadReset}}); none.SendS.Valid || none.AppReadS.Valid || none.P95MS.Valid {
		t.Errorf("no ok upload or request: %+v, want send, app read and p95 not measured", none)
	}
}

func TestSummarize(t *testing.T) {
	run := func(rep int, status string, p95 float64, ok, reset int, temp recorder.Maybe) RunRow {
		return RunRow{RunKey: lab.RunKey{Route: "direct", Server: "sync-2", Clients: 2, Rep: rep}, SizeBytes: 8 << 20, Status: status,
			FastFields: recorder.FastFields{P50MS: recorder.Some(p95 / 2), P95MS: recorder.Some(p95)}, SendS: recorder.Some(16), AppReadS: recorder.Some(15.9), UploadsOK: ok, UploadsReset: reset,
			WorkerTimeouts: recorder.Some(float64(reset)), TempPeakMiB: temp}
	}
	runs := []RunRow{run(1, recorder.RunOK, 100, 2, 0, recorder.Some(3)), run(2, recorder.RunOK, 300, 1, 1, recorder.Maybe{}), run(3, recorder.RunFailed, 9999, 0, 0, recorder.Some(50)),
		run(4, recorder.RunOK, 200, 2, 0, recorder.Some(7))}
	other := run(1, recorder.RunOK, 5, 2, 0, recorder.Maybe{})
	other.Route = "proxy-request-buffering-on"
	conds := Summarize(append(runs, other))
	if len(conds) != 2 {
		t.Fatalf("%d conditions, want 2", len(conds))
	}
	c := conds[0]
	if c.Runs != 3 || c.Excluded != 1 || c.P95MS != recorder.Some(200) || c.P95MinMS != recorder.Some(100) || c.P95MaxMS != recorder.Some(300) {
		t.Errorf("p95 over ok runs: %+v", c)
	}
	if c.OK != 5 || c.Reset != 1 || c.WorkerTimeouts != recorder.Some(1) || c.TempPeakMiB != recorder.Some(7) {
		t.Errorf("outcomes and peaks over ok runs: %+v", c)
	}
	if conds[1].Route != "proxy-request-buffering-on" || conds[1].TempPeakMiB.Valid {
		t.Errorf("second condition: %+v", conds[1])
	}
}

// TestRunColumnsKeepLayout: upload-runs.csv keeps every column's name,
// place and precision (the layout is 33ab07f's, before the shared status
// and /fast columns were written once).
func TestRunColumnsKeepLayout(t *testing.T) {
	const published = "run_id/0 route/0 server/0 uploaders/0 rep/0 size_bytes/0 rate_bps/0 app_timeout_s/3 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 send_s/3 app_read_s/3 uploads_ok/0 uploads_5xx/0 uploads_reset/0 uploads_timeout/0 uploads_other/0 worker_timeouts/0 temp_peak_mib/3 app_mem_mib/3 proxy_mem_mib/3"
	if got := recordertest.Layout[RunRow](); got != published {
		t.Errorf("%s:\n got %s\nwant %s", runFile, got, published)
	}
}

// TestRowContract: uploads.csv's and upload-runs.csv's rows read back as
// written, and every field of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Upload](t)
	recordertest.Contract[RunRow](t)
}

func FuzzReadUploads(f *testing.F) { recordertest.FuzzRead[Upload](f) }
func FuzzReadRuns(f *testing.F)    { recordertest.FuzzRead[RunRow](f) }
