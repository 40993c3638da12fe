package stalledreader

import (
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

func TestSummarizeRun(t *testing.T) {
	reqs := []recorder.Request{{LatencyMS: 2, Status: 200}, {LatencyMS: 3000, Status: 200}}
	downloads := []Download{
		{Outcome: OutcomeTruncated, EndedBy: EndedByAppTimeout, Bytes: 100},
		{Outcome: OutcomeTruncated, EndedBy: EndedBySendTimeout, Bytes: 300, AppSendS: recorder.Some(0.5)},
		{Outcome: OutcomeComplete, EndedBy: EndedByNone, Bytes: 1000, AppSendS: recorder.Some(12)},
		{Outcome: OutcomeTimeout, EndedBy: EndedByClient, Bytes: 200},
		{Outcome: OutcomeReset, EndedBy: EndedByUnknown}, {Outcome: OutcomeError, EndedBy: EndedByUnknown},
	}
	run := RunRow{FastFields: recorder.FastFields{FastPlanned: 2}, WorkerTimeouts: recorder.Some(1), AppTimeoutS: recorder.Some(10)}
	r := SummarizeRun(run, reqs, downloads)
	if r.FastOK != 2 || r.P95MS != recorder.Some(3000) {
		t.Errorf("fast columns: %+v", r)
	}
	if r.Complete != 1 || r.Truncated != 2 || r.Reset != 1 || r.Timeout != 1 || r.Other != 1 {
		t.Errorf("outcomes: %+v", r)
	}
	if r.ByClient != 1 || r.ByAppTimeout != 1 || r.BySendTimeout != 1 || r.ByUnknown != 2 {
		t.Errorf("enders: %+v", r)
	}
	if r.BytesMedian != recorder.Some(150) || r.AppHeldS != recorder.Some(12) {
		t.Errorf("bytes median %v (want 150), app held %v (want 12)", r.BytesMedian, r.AppHeldS)
	}
	// A killed worker leaves no record: it was held for the timeout.
	killed := SummarizeRun(run, nil, downloads[:1])
	if killed.AppHeldS != recorder.Some(10) || killed.P95MS.Valid {
		t.Errorf("killed: app held %v, p95 %v", killed.AppHeldS, killed.P95MS)
	}
	conds := Summarize([]RunRow{r, {Status: recorder.RunFailed}, r})
	if len(conds) != 2 {
		t.Fatalf("%d conditions, want 2 (the failed run has another key)", len(conds))
	}
	if c := conds[0]; c.Runs != 0 || c.Excluded != 2 {
		// r has no status set: not ok.
		t.Errorf("runs without status ok: %+v", c)
	}
	r.Status = recorder.RunOK
	c := Summarize([]RunRow{r, r})[0]
	if c.Runs != 2 || c.Truncated != 4 || c.WorkerTimeouts != recorder.Some(2) || c.AppHeldS != recorder.Some(12) || c.FastOK != 4 {
		t.Errorf("condition: %+v", c)
	}
	if c.P95MS != recorder.Some(3000) || c.P95MinMS != recorder.Some(3000) || c.P95MaxMS != recorder.Some(3000) {
		t.Errorf("condition's p95 %v, range %v-%v; want 3000 for each", c.P95MS, c.P95MinMS, c.P95MaxMS)
	}
}

// TestRunColumnsKeepLayout: stalled-runs.csv keeps every column's name,
// place and precision (the layout is 33ab07f's, before the shared status
// and /fast columns were written once).
func TestRunColumnsKeepLayout(t *testing.T) {
	const published = "run_id/0 route/0 server/0 mode/0 clients/0 rep/0 size_bytes/0 rate_bps/0 app_timeout_s/3 send_timeout_s/3 stall_s/3 give_up_s/3 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 complete/0 truncated/0 reset/0 timeout/0 other/0 by_client/0 by_app_timeout/0 by_send_timeout/0 by_unknown/0 bytes_median/0 worker_timeouts/0 app_held_s/3"
	if got := recordertest.Layout[RunRow](); got != published {
		t.Errorf("%s:\n got %s\nwant %s", runFile, got, published)
	}
}

// TestRowContract: stalled-downloads.csv's and stalled-runs.csv's rows
// read back as written, every field of each has one column, and a run
// row's verdict fields are its own.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Download](t)
	recordertest.Contract[RunRow](t)
	var r RunRow
	id, status, reason := r.VerdictFields(&r)
	*id, *status, *reason = "id", recorder.RunFailed, "why"
	if r.RunID != "id" || r.Status != recorder.RunFailed || r.Reason != "why" {
		t.Errorf("VerdictFields set %+v", r)
	}
}

func FuzzReadDownloads(f *testing.F) { recordertest.FuzzRead[Download](f) }
func FuzzReadRuns(f *testing.F)      { recordertest.FuzzRead[RunRow](f) }
