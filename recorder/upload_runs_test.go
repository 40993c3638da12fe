package recorder

import "testing"

func TestSummarizeUploadRun(t *testing.T) {
	reqs := []Request{{LatencyMS: 2, Status: 200}, {LatencyMS: 4000, Status: 200}, {LatencyMS: 1, Status: 0, Error: "reset"}}
	uploads := []Upload{
		{Outcome: UploadOK, SendS: 3, AppReadS: Some(2.9)},
		{Outcome: UploadOK, SendS: 5, AppReadS: Some(0.1)},
		{Outcome: UploadOK, SendS: 4}, // no Server-Timing: left out of app_read_s
		{Outcome: UploadReset}, {Outcome: UploadServerError}, {Outcome: UploadTimeout}, {Outcome: UploadError}, {Outcome: UploadStatus},
	}
	r := SummarizeUploadRun(UploadRun{RunID: "x", FastPlanned: 3}, reqs, uploads)
	if r.FastTotal != 3 || r.FastOK != 2 || r.FastSent != 3 || r.P50MS != Some(2) || r.P95MS != Some(4000) {
		t.Errorf("fast columns: %+v", r)
	}
	if r.SendS != Some(4) || r.AppReadS != Some(1.5) {
		t.Errorf("send %v, app read %v; want the medians 4 and 1.5 of the ok uploads", r.SendS, r.AppReadS)
	}
	if r.UploadsOK != 3 || r.UploadsReset != 1 || r.Uploads5xx != 1 || r.UploadsTimeout != 1 || r.UploadsOther != 2 {
		t.Errorf("outcomes: %+v", r)
	}
	if none := SummarizeUploadRun(UploadRun{}, nil, []Upload{{Outcome: UploadReset}}); none.SendS.Valid || none.AppReadS.Valid || none.P95MS.Valid {
		t.Errorf("no ok upload or request: %+v, want send, app read and p95 not measured", none)
	}
}

func TestSummarizeUploadConditions(t *testing.T) {
	run := func(rep int, status string, p95 float64, ok, reset int, temp Maybe) UploadRun {
		return UploadRun{Route: "direct", Server: "sync-2", Uploaders: 2, SizeBytes: 8 << 20, Rep: rep, Status: status,
			P50MS: Some(p95 / 2), P95MS: Some(p95), SendS: Some(16), AppReadS: Some(15.9), UploadsOK: ok, UploadsReset: reset,
			WorkerTimeouts: Some(float64(reset)), TempPeakMiB: temp}
	}
	runs := []UploadRun{run(1, RunOK, 100, 2, 0, Some(3)), run(2, RunOK, 300, 1, 1, Maybe{}), run(3, RunFailed, 9999, 0, 0, Some(50)),
		run(4, RunOK, 200, 2, 0, Some(7))}
	other := run(1, RunOK, 5, 2, 0, Maybe{})
	other.Route = "proxy-request-buffering-on"
	conds := SummarizeUploadConditions(append(runs, other))
	if len(conds) != 2 {
		t.Fatalf("%d conditions, want 2", len(conds))
	}
	c := conds[0]
	if c.Runs != 3 || c.Excluded != 1 || c.P95MS != Some(200) || c.P95MinMS != Some(100) || c.P95MaxMS != Some(300) {
		t.Errorf("p95 over ok runs: %+v", c)
	}
	if c.OK != 5 || c.Reset != 1 || c.WorkerTimeouts != Some(1) || c.TempPeakMiB != Some(7) {
		t.Errorf("outcomes and peaks over ok runs: %+v", c)
	}
	if conds[1].Route != "proxy-request-buffering-on" || conds[1].TempPeakMiB.Valid {
		t.Errorf("second condition: %+v", conds[1])
	}
}
