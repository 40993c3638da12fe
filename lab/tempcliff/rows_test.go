package tempcliff

import (
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// TestSummarizeWriteErrors: the exporter's failed temp writes are summed
// over a condition's ok runs that have them; a failed run's count is left
// out; a condition without any is None, not 0.
func TestSummarizeWriteErrors(t *testing.T) {
	tmpfs := RunRow{Server: "sync-2", SlowClients: 2, SizeBytes: 16 << 20, TempTmpfsBytes: 8 << 20, Status: recorder.RunOK}
	disk := tmpfs
	disk.TempTmpfsBytes = 0
	withErrs := func(r RunRow, status string, n recorder.Maybe) RunRow {
		r.Status, r.ExporterTempWriteErrors = status, n
		return r
	}
	conds := Summarize([]RunRow{
		withErrs(tmpfs, recorder.RunOK, recorder.Some(2)), withErrs(tmpfs, recorder.RunOK, recorder.Some(3)), withErrs(tmpfs, recorder.RunOK, recorder.None()),
		withErrs(tmpfs, recorder.RunFailed, recorder.Some(7)),
		withErrs(disk, recorder.RunOK, recorder.None()),
	})
	if len(conds) != 2 {
		t.Fatalf("%d conditions, want 2", len(conds))
	}
	if got := conds[0].ExporterTempWriteErrors; got != recorder.Some(5) || conds[0].Runs != 3 || conds[0].Excluded != 1 {
		t.Errorf("tmpfs: write errors %v over %d runs (%d excluded), want 5 over 3 (1 excluded)", got, conds[0].Runs, conds[0].Excluded)
	}
	if got := conds[1].ExporterTempWriteErrors; got.Valid {
		t.Errorf("disk: write errors %v, want none reported", got)
	}
}

// TestRunColumnsKeepLayout: temp-runs.csv keeps every column's name, place
// and precision (the layout is 33ab07f's, before the shared status and
// /fast columns were written once).
func TestRunColumnsKeepLayout(t *testing.T) {
	const published = "run_id/0 route/0 server/0 slow_clients/0 rep/0 size_bytes/0 max_temp_file_bytes/0 temp_tmpfs_bytes/0 started_at/0 status/0 reason/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3 app_send_s/3 receive_s/3 downloads_complete/0 downloads_cut/0 bytes_min/0 temp_peak_mib/3 temp_fs_avail_min_mib/3 proxy_errors/0 app_mem_mib/3 proxy_mem_mib/3 exporter_temp_write_errors/0"
	if got := recordertest.Layout[RunRow](); got != published {
		t.Errorf("%s:\n got %s\nwant %s", runFile, got, published)
	}
}

// TestVerdictFields: VerdictFields points at the row's own RunID, Status
// and Reason.
func TestVerdictFields(t *testing.T) {
	var r RunRow
	id, status, reason := RunRow{}.VerdictFields(&r)
	*id, *status, *reason = "x.rep1", recorder.RunFailed, "why"
	if r.RunID != "x.rep1" || r.Status != recorder.RunFailed || r.Reason != "why" {
		t.Errorf("VerdictFields set run_id %q, status %q, reason %q; want x.rep1, failed, why", r.RunID, r.Status, r.Reason)
	}
}

// TestRowContract: temp-runs.csv's rows read back as written, and every
// field has one column.
func TestRowContract(t *testing.T) { recordertest.Contract[RunRow](t) }

func FuzzReadRuns(f *testing.F) { recordertest.FuzzRead[RunRow](f) }
