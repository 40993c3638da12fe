package loadgendir

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// loadDir writes a loadgen directory: the record and ok rows, then the
// failed, skipped and not-sent rows extra adds, and two slow readers.
func loadDir(t *testing.T, ok int, extra ...recorder.Request) string {
	t.Helper()
	dir := t.TempDir()
	if err := Write(dir, sample); err != nil {
		t.Fatal(err)
	}
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := extra
	for i := range ok {
		at := float64(i) * 0.01
		rows = append(rows, recorder.Request{RunID: "r", Seq: i, ScheduledS: at, StartS: at, ScheduleLagMS: 0.1 + float64(i%20)/10,
			LatencyMS: 2 + float64(i%50), Status: 200, Bytes: 5})
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	larges, err := recorder.CreateFile[recorder.LargeResponse](dir)
	if err != nil {
		t.Fatal(err)
	}
	for c, outcome := range []string{recorder.DownloadComplete, recorder.DownloadClientError} {
		if err := larges.Write(recorder.LargeResponse{RunID: "r", Client: c, Status: 200, Outcome: outcome, AppSendS: recorder.None()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := larges.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

var nan = math.NaN()

// failedRows are a failed request that took time, one without a
// response or time, one skipped as late and one never sent.
var failedRows = []recorder.Request{
	{RunID: "r", Seq: 9000, ScheduledS: 0.5, StartS: 0.5, ScheduleLagMS: 0.2, LatencyMS: 30000, Error: `Get "http://127.0.0.1:8000/fast": context deadline exceeded`},
	{RunID: "r", Seq: 9001, ScheduledS: 0.6, StartS: 0.6, ScheduleLagMS: 2.5, ConnectMS: nan, TTFBMS: nan, LatencyMS: nan, Error: "dial tcp 127.0.0.1:8000: connect: connection refused"},
	{RunID: "r", Seq: 9002, ScheduledS: 0.7, StartS: nan, ScheduleLagMS: 40, ConnectMS: nan, TTFBMS: nan, LatencyMS: nan, Error: "late"},
	{RunID: "r", Seq: 9003, ScheduledS: 0.8, StartS: nan, ScheduleLagMS: nan, ConnectMS: nan, TTFBMS: nan, LatencyMS: nan, Error: "not_sent: the run was stopped before the request was due"},
}

// A merged load's directory: the section titled for the load generator
// and its target, every ok request drawn at its start and the failed one
// that took time apart, and the summary's figures from the rows.
func TestSectionDrawsEveryRequest(t *testing.T) {
	dir := loadDir(t, 100, failedRows...)
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	if !slices.Equal(rep.Experiments, []string{Name}) {
		t.Errorf("sections %v, want %s", rep.Experiments, Name)
	}
	f := labtest.Figure(t, rep, "loadgen-latency")
	if !slices.Equal(f.Points, []int{100, 1}) || !strings.Contains(f.Caption, "Each of the 100 ok requests") ||
		!strings.Contains(f.Caption, "2 failed without a latency") || !strings.Contains(f.Caption, "1 were never sent") {
		t.Errorf("figure %+v", f)
	}
	page, _ := os.ReadFile(rep.HTML)
	for _, want := range []string{
		"<title>slowlab report: slowlab loadgen: http://127.0.0.1:8000/fast",
		"merged from 4 shards (slowlab merge)",
		"<td>requests</td><td>104: ok 100, failed 3, not sent 1</td>",
		"<td>error: context deadline exceeded</td><td class=\"num\">1</td>",
		"<td>error: connection refused</td><td class=\"num\">1</td>",
		"<td>error: late</td><td class=\"num\">1</td>",
		"<td>latency ms (ok requests)</td><td>p50 26.00  p95 49.00  p99 51.00  max 51.00</td>",
		"<td>on schedule</td><td>", "50.00% started within 1ms (late 51 of 102 started, skipped 1)",
		"<td>slow readers</td><td>2: 1 complete</td>",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// Over maxPoints ok requests the figure draws their p50, p95 and maximum
// per window, at most windows points each.
func TestSectionWindowsALargeRun(t *testing.T) {
	dir := loadDir(t, maxPoints+1)
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	f := labtest.Figure(t, rep, "loadgen-latency")
	if f.Series != 3 || len(f.Points) != 3 || f.Points[0] > windows || f.Points[0] < windows-1 || !strings.Contains(f.Caption, "p50, p95 and maximum latency") {
		t.Errorf("figure %+v", f)
	}
}
