package recorder

import "testing"

// TestSummarizeTempConditionsWriteErrors: the exporter's failed temp
// writes are summed over a condition's ok runs that have them; a failed
// run's count is left out; a condition without any is None, not 0.
func TestSummarizeTempConditionsWriteErrors(t *testing.T) {
	tmpfs := TempRun{Server: "sync-2", SlowClients: 2, SizeBytes: 16 << 20, TempTmpfsBytes: 8 << 20, Status: RunOK}
	disk := tmpfs
	disk.TempTmpfsBytes = 0
	withErrs := func(r TempRun, status string, n Maybe) TempRun {
		r.Status, r.ExporterTempWriteErrors = status, n
		return r
	}
	conds := SummarizeTempConditions([]TempRun{
		withErrs(tmpfs, RunOK, Some(2)), withErrs(tmpfs, RunOK, Some(3)), withErrs(tmpfs, RunOK, None()),
		withErrs(tmpfs, RunFailed, Some(7)),
		withErrs(disk, RunOK, None()),
	})
	if len(conds) != 2 {
		t.Fatalf("%d conditions, want 2", len(conds))
	}
	if got := conds[0].ExporterTempWriteErrors; got != Some(5) || conds[0].Runs != 3 || conds[0].Excluded != 1 {
		t.Errorf("tmpfs: write errors %v over %d runs (%d excluded), want 5 over 3 (1 excluded)", got, conds[0].Runs, conds[0].Excluded)
	}
	if got := conds[1].ExporterTempWriteErrors; got.Valid {
		t.Errorf("disk: write errors %v, want none reported", got)
	}
}
