package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/recorder"
)

// copyTempFixture copies testdata/FIXTURE's files named into a new
// results directory.
func copyTempFixture(t *testing.T, fixture string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", fixture, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// reportPage is report.html with its entities unescaped.
func reportPage(t *testing.T, rep *Report) string {
	t.Helper()
	b, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(string(b))
}

// TestWriteTempCliff reports a --quick temp-cliff run on the embedded
// stack (testdata/tempcliff: 6 and 32 MiB against max temp 8m, 16 MiB
// against 0): its section alone (environment.json names it, though
// temp-disk-full reads the same temp-runs.csv); app_send_s and /fast p95
// against the size with a line of 2 points for 8m and of 1 for 0 and the
// 8 MiB cliff marked in each panel; every download complete; and the
// CSVs' numbers in the tables.
func TestWriteTempCliff(t *testing.T) {
	dir := copyTempFixture(t, "tempcliff", tempRunsFile, tempDownloadsFile, EnvironmentFile)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{"temp-cliff"}) {
		t.Errorf("experiments %v, want temp-cliff", rep.Experiments)
	}
	checkFiles(t, rep)
	checkHTML(t, rep)
	if got := figureNames(rep); !slices.Equal(got, []string{"temp-cliff", "temp-cliff-downloads"}) {
		t.Errorf("figures %v", got)
	}
	f := figureByName(t, rep, "temp-cliff")
	if f.Panels != 2 || !slices.Equal(f.Points, []int{1, 2, 1, 1, 2, 1}) {
		t.Errorf("temp-cliff: %d panels, points %v; want 2 panels of the 8 MiB cliff, the 8m line (6, 32 MiB) and the 0 line (16 MiB)", f.Panels, f.Points)
	}
	if f := figureByName(t, rep, "temp-cliff-downloads"); !slices.Equal(f.Points, []int{3, 6}) {
		t.Errorf("temp-cliff-downloads: points %v; want 3 size bars and 6 complete downloads", f.Points)
	}
	page := reportPage(t, rep)
	// temp-runs.csv: /fast p95 2732.616 ms and app_send 3.18 s above the
	// cliff, 3.609 ms and 0.01 s below; large-responses.csv: 3.257 s.
	for _, want := range []string{">2733</td>", ">3.180</td>", ">3.61</td>", ">0.010</td>", ">3.257</td>", ">24/24</td>",
		"sync-2.slow2.32m.max8m.rep1", ">32.0</td>", ">disk</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes %q, want none", rep.Notes)
	}
}

// TestWriteTempDiskFull reports a --quick temp-disk-full run on the
// embedded stack (testdata/tempdisk: an 8 MiB tmpfs, then disk): its
// section alone; both tmpfs downloads cut short of their 16 MiB, both on
// disk complete; the proxy's 2 error lines, the least free space the
// exporter saw and /fast p95 per temp dir, from the CSVs.
func TestWriteTempDiskFull(t *testing.T) {
	dir := copyTempFixture(t, "tempdisk", tempRunsFile, tempDownloadsFile, EnvironmentFile)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{"temp-disk-full"}) {
		t.Errorf("experiments %v, want temp-disk-full", rep.Experiments)
	}
	checkFiles(t, rep)
	checkHTML(t, rep)
	f := figureByName(t, rep, "temp-disk-downloads")
	if f.Series != 3 || !slices.Equal(f.Points, []int{2, 2, 2}) {
		t.Errorf("temp-disk-downloads: points %v; want 2 size bars, 2 complete, 2 cut", f.Points)
	}
	page := reportPage(t, rep)
	// temp-runs.csv: the tmpfs run's fewest bytes 2945536 (2.81 MiB,
	// 17.6% of 16 MiB), 2 proxy errors, avail min 8.000 MiB (the
	// exporter's 50 ms polls missed the fill, which lasts milliseconds),
	// /fast p95 4.234 and 4.161 ms; large-responses.csv: 3395072 bytes
	// (3.24 MiB).
	for _, want := range []string{"<td>8 MiB tmpfs</td>", ">2.81</td>", ">17.6</td>", ">2</td>", ">8.00</td>", ">3.24</td>",
		">short_body</td>", "response body incomplete: 2945536 of 16777216 bytes", ">4.23</td>", ">4.16</td>",
		// The runs predate exporter_temp_write_errors: the column is there, empty.
		">exporter temp write errors</th>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestTempSectionsWithoutEnvironment: temp-runs.csv alone (no
// environment.json to say which experiment wrote it) gets both sections;
// without large-responses.csv each says what it left out; a failed run is
// excluded from the figure and counted in the table.
func TestTempSectionsWithoutEnvironment(t *testing.T) {
	dir := copyTempFixture(t, "tempcliff", tempRunsFile)
	runs, err := recorder.ReadFile[recorder.TempRun](filepath.Join(dir, tempRunsFile))
	if err != nil {
		t.Fatal(err)
	}
	failed := runs[1] // 32m against 8m
	failed.RunID, failed.Rep, failed.Status, failed.Reason = strings.Replace(failed.RunID, "rep1", "rep2", 1), 2, recorder.RunFailed, "start stack: boom"
	failed.AppSendS = recorder.Some(99)
	if err := os.Remove(filepath.Join(dir, tempRunsFile)); err != nil {
		t.Fatal(err)
	}
	w := create[recorder.TempRun](t, dir)
	for _, r := range append(runs, failed) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{"temp-cliff", "temp-disk-full"}) {
		t.Errorf("experiments %v, want both temp sections", rep.Experiments)
	}
	if got := figureNames(rep); !slices.Equal(got, []string{"temp-cliff"}) {
		t.Errorf("figures %v, want only temp-cliff (no downloads)", got)
	}
	if f := figureByName(t, rep, "temp-cliff"); !slices.Equal(f.Points, []int{1, 2, 1, 1, 2, 1}) {
		t.Errorf("temp-cliff points %v: the failed run must not add a point", f.Points)
	}
	if notes := strings.Join(rep.Notes, " "); strings.Count(notes, tempDownloadsFile+" is not present") != 2 {
		t.Errorf("notes %q: want each section to say %s is missing", rep.Notes, tempDownloadsFile)
	}
	// The 32m row: 1 ok run, 1 excluded; the failed run's app_send_s
	// (99 s) nowhere.
	page := reportPage(t, rep)
	if !strings.Contains(page, `<td class="num">32.0</td><td class="num">8.0</td><td>disk</td><td class="num">1</td><td class="num">1</td>`) || strings.Contains(page, "99.000") {
		t.Errorf("report.html: the 32m condition's runs and exclusion are not as written, or the failed run's app_send_s shows")
	}
}
