package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/loadgendir"
	"github.com/slowlab/slowlab/recorder"
)

// writeResults writes a minimal slow-client results directory: two ok
// runs of one condition, with their requests.
func writeResults(t *testing.T, dir string) {
	t.Helper()
	reqs, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	var runs []recorder.Run
	for rep := 1; rep <= 2; rep++ {
		id := "direct-sync-2-s0-r" + string(rune('0'+rep))
		var rows []recorder.Request
		for seq := range 72 {
			r := recorder.Request{RunID: id, Route: "direct", Server: "sync-2", Rep: rep, Seq: seq,
				ScheduledS: 0.25 + float64(seq)*0.125, StartS: 0.25 + float64(seq)*0.125,
				LatencyMS: 1 + float64(seq%7)/3 + float64(rep), Status: 200, Bytes: 12}
			rows = append(rows, r)
			if err := reqs.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, recorder.SummarizeRun(recorder.RunMeta{RunID: id, Route: "direct", Server: "sync-2",
			Rep: rep, StartedAt: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Status: recorder.RunOK}, rows, nil))
	}
	if err := reqs.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := recorder.CreateFile[recorder.Run](dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	code, stdout, stderr := runCmd(t, "report", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	html := filepath.Join(dir, "report.html")
	for _, want := range []string{
		"report: " + html + "\n",
		"2 figures (files relative to " + dir + "):\n",
		"  fast-p95: /fast p95 latency per condition (1 series) figures/fast-p95.png figures/fast-p95.svg\n",
		"  timeseries-direct-sync-2-s0: direct, sync-2, 0 slow clients: run direct-sync-2-s0-r1 over time (1 series) " +
			"figures/timeseries-direct-sync-2-s0.png figures/timeseries-direct-sync-2-s0.svg\n",
		"note: environment.json is not present",
		"note: Not present in the results directory: conditions.csv, large-responses.csv, resource-samples.csv",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{html, filepath.Join(dir, "figures", "fast-p95.png"), filepath.Join(dir, "figures", "fast-p95.svg")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	// DIR may also follow --.
	if code, _, stderr := runCmd(t, "report", "--", dir); code != 0 {
		t.Errorf("report -- DIR: exit %d, %s", code, stderr)
	}
}

// TestReportLoadgenDirectory: a load generator's directory (loadgen.json,
// requests.csv and its manifest.json, no environment.json) has one
// figure, which `slowlab report` and a session's report line count in the
// singular, and no note that environment.json is missing, since
// `slowlab loadgen --out` writes none.
func TestReportLoadgenDirectory(t *testing.T) {
	dir := t.TempDir()
	rec := loadgendir.Record{RunID: "r", Target: "http://127.0.0.1:8000/fast", Rate: 10, Duration: "1s", StartOffset: "0s",
		Timeout: "30s", MaxLag: "0s", Planned: 10, Shards: 1}
	if err := loadgendir.Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		at := float64(i) / 10
		if err := w.Write(recorder.Request{RunID: "r", Seq: i, ScheduledS: at, StartS: at, ScheduleLagMS: 0.1, LatencyMS: 2, Status: 200, Bytes: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recorder.WriteManifest(dir, "loadgen", loadgendir.Name); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "report", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want := "1 figure (files relative to " + dir + "):\n"; !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	if strings.Contains(stdout, "environment.json") {
		t.Errorf("stdout notes environment.json in a load generator's directory:\n%s", stdout)
	}
	var out, errs strings.Builder
	lab.WriteReport(dir, &out, &errs)
	if want := "\nreport: " + filepath.Join(dir, "report.html") + " (1 figure)\n"; out.String() != want || errs.Len() != 0 {
		t.Errorf("session's report line %q, stderr %q; want %q", out.String(), errs.String(), want)
	}
}

// TestReportCutRow: a results directory whose requests.csv ends mid-row,
// as a killed session leaves it, still reports, saying once on stderr
// that the cut row was left out; a bad row in the middle still fails.
func TestReportCutRow(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	reqs := filepath.Join(dir, "requests.csv")
	b, err := os.ReadFile(reqs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	last := lines[len(lines)-2]
	if err := os.WriteFile(reqs, b[:len(b)-len(last)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "report", dir)
	want := "slowlab report: warning: " + reqs + ": its last row (line 145) was cut short (the session was killed?); left out ("
	if code != 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant one line starting %q", code, stderr, want)
	}
	if !strings.Contains(stdout, "report: "+filepath.Join(dir, "report.html")) {
		t.Errorf("stdout:\n%s", stdout)
	}

	// The same row cut in the middle of the file is an error naming it.
	mid := strings.Join(lines[:10], "") + lines[10][:len(lines[10])/2] + "\n" + strings.Join(lines[11:], "")
	if err := os.WriteFile(reqs, []byte(mid), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "report", dir)
	if code != 1 || !strings.Contains(stderr, "requests.csv: record on line 11: wrong number of fields") {
		t.Errorf("mid-file cut: exit %d, stderr %q", code, stderr)
	}
}

func TestReportErrors(t *testing.T) {
	empty := t.TempDir()
	bad := t.TempDir()
	writeResults(t, bad)
	runs := filepath.Join(bad, "runs.csv")
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runs, []byte(strings.Replace(string(b), ",ok,", ",ok,,x", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(empty, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string // the one line on stderr
	}{
		{[]string{"report"}, 2, "slowlab report: which results directory? e.g. slowlab report results/slow-client-"},
		{[]string{"report", empty, empty}, 2, `slowlab report: unexpected argument "` + empty + `": give one results directory`},
		{[]string{"report", "--out", empty}, 2, "slowlab report: flag provided but not defined: -out (see --help)"},
		{[]string{"report", filepath.Join(empty, "nope")}, 2, "slowlab report: results directory " + filepath.Join(empty, "nope") + ": no such file or directory"},
		{[]string{"report", file}, 2, "slowlab report: results directory " + file + ": not a directory"},
		{[]string{"report", empty}, 1, "slowlab report: " + empty + ": no results files: none of runs.csv, groups.csv, gap.csv, sweep.csv, upload-runs.csv, idle-runs.csv, stalled-runs.csv, sse-runs.csv, temp-runs.csv, ws-runs.csv, h2-runs.csv, loadgen.json, assessment.json is present"},
		{[]string{"report", bad}, 1, "slowlab report: read " + runs + ": runs.csv: "},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("stderr:\n%s\nwant one line starting %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestReportHelp(t *testing.T) {
	code, stdout, _ := runCmd(t, "report", "--help")
	if code != 0 || !strings.Contains(stdout, "Usage: slowlab report DIR") || !strings.Contains(stdout, "report.html") {
		t.Errorf("exit %d, stdout:\n%s", code, stdout)
	}
}
