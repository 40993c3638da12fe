package recorder

import "testing"

func TestSummarizeStalledRun(t *testing.T) {
	reqs := []Request{{LatencyMS: 2, Status: 200}, {LatencyMS: 3000, Status: 200}}
	downloads := []StalledDownload{
		{Outcome: StalledTruncated, EndedBy: EndedByAppTimeout, Bytes: 100},
		{Outcome: StalledTruncated, EndedBy: EndedBySendTimeout, Bytes: 300, AppSendS: Some(0.5)},
		{Outcome: StalledComplete, EndedBy: EndedByNone, Bytes: 1000, AppSendS: Some(12)},
		{Outcome: StalledTimeout, EndedBy: EndedByClient, Bytes: 200},
		{Outcome: StalledReset, EndedBy: EndedByUnknown}, {Outcome: StalledError, EndedBy: EndedByUnknown},
	}
	run := StalledRun{FastPlanned: 2, WorkerTimeouts: Some(1), AppTimeoutS: Some(10)}
	r := SummarizeStalledRun(run, reqs, downloads)
	if r.FastOK != 2 || r.P95MS != Some(3000) {
		t.Errorf("fast columns: %+v", r)
	}
	if r.Complete != 1 || r.Truncated != 2 || r.Reset != 1 || r.Timeout != 1 || r.Other != 1 {
		t.Errorf("outcomes: %+v", r)
	}
	if r.ByClient != 1 || r.ByAppTimeout != 1 || r.BySendTimeout != 1 || r.ByUnknown != 2 {
		t.Errorf("enders: %+v", r)
	}
	if r.BytesMedian != Some(150) || r.AppHeldS != Some(12) {
		t.Errorf("bytes median %v (want 150), app held %v (want 12)", r.BytesMedian, r.AppHeldS)
	}
	// A killed worker leaves no record: it was held for the timeout.
	killed := SummarizeStalledRun(run, nil, downloads[:1])
	if killed.AppHeldS != Some(10) || killed.P95MS.Valid {
		t.Errorf("killed: app held %v, p95 %v", killed.AppHeldS, killed.P95MS)
	}
	conds := SummarizeStalledConditions([]StalledRun{r, {Status: RunFailed}, r})
	if len(conds) != 2 {
		t.Fatalf("%d conditions, want 2 (the failed run has another key)", len(conds))
	}
	if c := conds[0]; c.Runs != 0 || c.Excluded != 2 {
		// r has no status set: not ok.
		t.Errorf("runs without status ok: %+v", c)
	}
	r.Status = RunOK
	c := SummarizeStalledConditions([]StalledRun{r, r})[0]
	if c.Runs != 2 || c.Truncated != 4 || c.WorkerTimeouts != Some(2) || c.AppHeldS != Some(12) || c.FastOK != 4 {
		t.Errorf("condition: %+v", c)
	}
}
