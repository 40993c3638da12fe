package tempcliff_test

import (
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab/tempcliff"
	"github.com/slowlab/slowlab/lab/tempdisk"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// The results files of both sections, and both sections, which read the
// same temp-runs.csv.
var (
	runFile      = recorder.FileName[tempcliff.RunRow]()
	downloadFile = recorder.FileName[recorder.LargeResponse]()
	sections     = []report.Section{tempcliff.Section, tempdisk.Section}
)

// page is report.html with its entities unescaped.
func page(t *testing.T, rep *report.Report) string {
	t.Helper()
	b, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(string(b))
}

func figureNames(rep *report.Report) []string {
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	return names
}

// TestReport reports a --quick temp-cliff run on the embedded stack
// (testdata/quick: 6 and 32 MiB against max temp 8m, 16 MiB against 0):
// its section alone (environment.json names it, though temp-disk-full
// reads the same temp-runs.csv); app_send_s and /fast p95 against the size
// with a line of 2 points for 8m and of 1 for 0 and the 8 MiB cliff marked
// in each panel; every download complete; and the CSVs' numbers in the
// tables.
func TestReport(t *testing.T) {
	rep := labtest.ReportFrom(t, filepath.Join("testdata", "quick"), sections, runFile, downloadFile, report.EnvironmentFile)
	if !slices.Equal(rep.Experiments, []string{"temp-cliff"}) {
		t.Errorf("experiments %v, want temp-cliff", rep.Experiments)
	}
	if got := figureNames(rep); !slices.Equal(got, []string{"temp-cliff", "temp-cliff-downloads"}) {
		t.Errorf("figures %v", got)
	}
	f := labtest.Figure(t, rep, "temp-cliff")
	if f.Panels != 2 || !slices.Equal(f.Points, []int{1, 2, 1, 1, 2, 1}) {
		t.Errorf("temp-cliff: %d panels, points %v; want 2 panels of the 8 MiB cliff, the 8m line (6, 32 MiB) and the 0 line (16 MiB)", f.Panels, f.Points)
	}
	if f := labtest.Figure(t, rep, "temp-cliff-downloads"); !slices.Equal(f.Points, []int{3, 6}) {
		t.Errorf("temp-cliff-downloads: points %v; want 3 size bars and 6 complete downloads", f.Points)
	}
	text := page(t, rep)
	// temp-runs.csv: /fast p95 2732.616 ms and app_send 3.18 s above the
	// cliff, 3.609 ms and 0.01 s below; large-responses.csv: 3.257 s.
	for _, want := range []string{">2732.6</td>", ">3.180</td>", ">3.6</td>", ">0.010</td>", ">3.257</td>", ">24/24</td>",
		"sync-2.slow2.32m.max8m.rep1", ">32.0</td>", ">disk</td>"} {
		if !strings.Contains(text, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes %q, want none", rep.Notes)
	}
}

// TestSectionsWithoutEnvironment: temp-runs.csv alone (no
// environment.json to say which experiment wrote it) gets both sections;
// without large-responses.csv each says what it left out; a failed run is
// excluded from the figure and counted in the table.
func TestSectionsWithoutEnvironment(t *testing.T) {
	runs, err := recorder.ReadFile[tempcliff.RunRow](filepath.Join("testdata", "quick", runFile))
	if err != nil {
		t.Fatal(err)
	}
	failed := runs[1] // 32m against 8m
	failed.RunID, failed.Rep, failed.Status, failed.Reason = strings.Replace(failed.RunID, "rep1", "rep2", 1), 2, recorder.RunFailed, "start stack: boom"
	failed.AppSendS = recorder.Some(99)
	from := t.TempDir()
	w, err := recorder.CreateFile[tempcliff.RunRow](from)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(runs, failed) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep := labtest.ReportFrom(t, from, sections, runFile)
	if !slices.Equal(rep.Experiments, []string{"temp-cliff", "temp-disk-full"}) {
		t.Errorf("experiments %v, want both temp sections", rep.Experiments)
	}
	if got := figureNames(rep); !slices.Equal(got, []string{"temp-cliff"}) {
		t.Errorf("figures %v, want only temp-cliff (no downloads)", got)
	}
	if f := labtest.Figure(t, rep, "temp-cliff"); !slices.Equal(f.Points, []int{1, 2, 1, 1, 2, 1}) {
		t.Errorf("temp-cliff points %v: the failed run must not add a point", f.Points)
	}
	if notes := strings.Join(rep.Notes, " "); strings.Count(notes, downloadFile+" is not present") != 2 {
		t.Errorf("notes %q: want each section to say %s is missing", rep.Notes, downloadFile)
	}
	// The 32m row: 1 ok run, 1 excluded; the failed run's app_send_s
	// (99 s) nowhere.
	text := page(t, rep)
	if !strings.Contains(text, `<td class="num">32m</td><td class="num">8m</td><td class="num">disk</td><td class="num">1</td><td class="num">1</td>`) || strings.Contains(text, "99.000") {
		t.Errorf("report.html: the 32m condition's runs and exclusion are not as written, or the failed run's app_send_s shows")
	}
}

// TestReportMayHold: the section says, from the results directory's
// scenario.yaml and environment.json alone, which conditions expecting
// the app held ran on a path that may hold their whole response
// (testdata/quick: this host's tcp_rmem max 32 MiB, under which the
// model cannot tell for 32 MiB against 8m nor 16 MiB against 0); nothing
// under settings whose path holds neither (tcp_rmem max 6 MiB), nor
// without scenario.yaml, nor without recorded settings.
func TestReportMayHold(t *testing.T) {
	quick := filepath.Join("testdata", "quick")
	files := []string{runFile, downloadFile, report.EnvironmentFile, "scenario.yaml"}
	warned := []string{"Warning: temp-cliff sync-2, 2 slow, 32m, max temp 8m: the path may hold the whole 32.00 MiB response",
		"Warning: temp-cliff sync-2, 2 slow, 16m, max temp 0: the path may hold the whole 16.00 MiB response",
		"namespace host: tcp_wmem 4096 16384 4194304, tcp_rmem 4096 131072 33554432", "2 condition(s)"}
	text := page(t, labtest.ReportFrom(t, quick, sections, files...))
	for _, want := range warned {
		if !strings.Contains(text, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(text, "6m, max temp 8m: the path may hold") {
		t.Error("report.html warns of 6 MiB against 8m, whose app is meant to be free")
	}
	env, err := os.ReadFile(filepath.Join(quick, report.EnvironmentFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(dir string) error{
		"tcp_rmem max 6 MiB": func(dir string) error {
			b := strings.Replace(string(env), "4096 131072 33554432", "4096 131072 6291456", 1)
			return os.WriteFile(filepath.Join(dir, report.EnvironmentFile), []byte(b), 0o644)
		},
		"no scenario.yaml": func(dir string) error { return os.Remove(filepath.Join(dir, "scenario.yaml")) },
		"no settings recorded": func(dir string) error {
			b := string(env)
			b = b[:strings.Index(b, `,
      "net"`)] + "\n    }\n  ]\n}\n"
			return os.WriteFile(filepath.Join(dir, report.EnvironmentFile), []byte(b), 0o644)
		},
	} {
		from := t.TempDir()
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(quick, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(from, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := change(from); err != nil {
			t.Fatal(err)
		}
		var present []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(from, f)); err == nil {
				present = append(present, f)
			}
		}
		if text := page(t, labtest.ReportFrom(t, from, sections, present...)); strings.Contains(text, "may hold the whole") {
			t.Errorf("%s: report.html warns", name)
		}
	}
}

// TestReportHeldMeasured: the section says which conditions expecting
// the app held had their downloads held by the path, from the results
// directory's rows (testdata/pathheld: a --quick session in a namespace
// whose tcp_rmem default and maximum are 32 MiB, app_send_s 0.04-0.13 s
// of receive_s 2-4 s), with the figures; nothing for testdata/quick,
// whose app was held (app_send_s 1.0-3.3 s), nor where large-responses.csv
// lacks the app's send times, complete downloads or any download.
func TestReportHeldMeasured(t *testing.T) {
	held := filepath.Join("testdata", "pathheld")
	files := []string{runFile, downloadFile, report.EnvironmentFile, "scenario.yaml"}
	text := page(t, labtest.ReportFrom(t, held, sections, files...))
	for _, want := range []string{"Measured: in 2 condition(s) whose finding needs the app held",
		"Warning: temp-cliff sync-2, 2 slow, 32m, max temp 8m: the path held the 32 MiB downloads, not the app: median app_send_s 0.051 s " +
			"is under a quarter of the median client_receive_s 4.008 s",
		"Warning: temp-cliff sync-2, 2 slow, 16m, max temp 0: the path held the 16 MiB downloads, not the app: median app_send_s 0.119 s"} {
		if !strings.Contains(text, want) {
			t.Errorf("testdata/pathheld: report.html lacks %q", want)
		}
	}
	if strings.Contains(text, "6m, max temp 8m: the path held") {
		t.Error("testdata/pathheld: report.html warns of 6 MiB against 8m, whose app is meant to be free")
	}
	if text := page(t, labtest.ReportFrom(t, filepath.Join("testdata", "quick"), sections, files...)); strings.Contains(text, "the path held") {
		t.Error("testdata/quick: report.html warns, though its app was held")
	}
	b, err := os.ReadFile(filepath.Join(held, downloadFile))
	if err != nil {
		t.Fatal(err)
	}
	var unrecorded, cut []string // the app's send unrecorded; every download cut short
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(l, ",")
		if f[0] != "run_id" {
			f[9] = ""
		}
		unrecorded = append(unrecorded, strings.Join(f, ","))
		cut = append(cut, strings.Replace(l, ",true,complete,", ",false,short_body,cut", 1))
	}
	for name, csv := range map[string]string{"app_send_s unrecorded": strings.Join(unrecorded, "\n") + "\n",
		"every download cut": strings.Join(cut, "\n") + "\n", "no downloads": strings.SplitAfter(string(b), "\n")[0]} {
		from := t.TempDir()
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(held, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == downloadFile {
				b = []byte(csv)
			}
			if err := os.WriteFile(filepath.Join(from, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if text := page(t, labtest.ReportFrom(t, from, sections, files...)); strings.Contains(text, "the path held") {
			t.Errorf("%s: report.html warns", name)
		}
	}
}
