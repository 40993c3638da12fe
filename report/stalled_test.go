package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// copyStalledFixture copies testdata/stalled's files named into a new
// results directory.
func copyStalledFixture(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", "stalled", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWriteStalled reports a --quick stalled-reader run on the embedded
// stack (testdata/stalled: 5 conditions, 9 downloads): its section alone;
// the bytes figure with a size bar per condition and each download in the
// series of its outcome and ender (2 complete on async, 2 truncated by
// the app's timeout direct, 4 by send_timeout behind the proxy, 1 slow
// reader that hit its own bound); /fast p95 and worker timeouts for
// every condition; and the numbers of the CSVs in the tables.
func TestWriteStalled(t *testing.T) {
	dir := copyStalledFixture(t, stalledRunsFile, stalledDownloadsFile)
	rep := writeOnly(t, dir, "stalled-reader")
	if got := figureNames(rep); !slices.Equal(got, []string{"stalled-bytes", "stalled-fast-p95", "stalled-worker-timeouts"}) {
		t.Errorf("figures %v", got)
	}
	if f := figureByName(t, rep, "stalled-bytes"); !slices.Equal(f.Points, []int{5, 2, 2, 4, 1}) {
		t.Errorf("stalled-bytes: points %v; want 5 size bars, then 2 complete, 2 truncated by app_timeout, 4 by send_timeout, 1 timeout by client", f.Points)
	}
	if f := figureByName(t, rep, "stalled-fast-p95"); !slices.Equal(f.Points, []int{5, 5}) {
		t.Errorf("stalled-fast-p95: points %v; want p95 and p50 for 5 conditions", f.Points)
	}
	if f := figureByName(t, rep, "stalled-worker-timeouts"); !slices.Equal(f.Points, []int{5, 5}) {
		t.Errorf("stalled-worker-timeouts: points %v; want WORKER TIMEOUT lines and downloads for 5 conditions", f.Points)
	}
	if notes := strings.Join(rep.Notes, " "); strings.Contains(notes, "left out") {
		t.Errorf("notes %q, want nothing of the section left out", rep.Notes)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{
		`<td class="num">2507</td>`,      // direct sync-2 stalled: /fast p95 about the 3 s timeout
		`<td class="num">3.34</td>`,      // bytes received when the worker was killed
		`<td class="num">10.042</td>`,    // the async app held its worker through the stall
		"direct.sync-2.slow1.app3s.rep1", // the slow reader's row in the downloads table
		"context deadline exceeded",      // and its error
		"response body incomplete: 3502080 of 4194304 bytes",
		">send_timeout</td>", ">app_timeout</td>", ">client</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestWriteStalledWithoutDownloads: without stalled-downloads.csv the
// section keeps the figures drawn from the runs and says what it left out.
func TestWriteStalledWithoutDownloads(t *testing.T) {
	dir := copyStalledFixture(t, stalledRunsFile)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if got := figureNames(rep); !slices.Equal(got, []string{"stalled-fast-p95", "stalled-worker-timeouts"}) {
		t.Errorf("figures %v, want the /fast p95 and worker-timeouts figures", got)
	}
	if notes := strings.Join(rep.Notes, " "); !strings.Contains(notes, "Bytes-received figure and the downloads table left out") ||
		!strings.Contains(notes, stalledDownloadsFile) {
		t.Errorf("notes %q, want one saying the bytes figure was left out, naming %s", rep.Notes, stalledDownloadsFile)
	}
}
