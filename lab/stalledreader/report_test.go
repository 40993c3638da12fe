package stalledreader

import (
	"html"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
)

// TestReport reports a --quick stalled-reader run on the embedded stack
// (testdata: 5 conditions, 9 downloads): the bytes figure with a size bar
// per condition and each download in the series of its outcome and ender
// (2 complete on async, 2 truncated by the app's timeout direct, 4 by
// send_timeout behind the proxy, 1 slow reader that hit its own bound);
// /fast p95 and worker timeouts for every condition; and the numbers of
// the CSVs in the tables. labtest.Report checks the files and the page.
func TestReport(t *testing.T) {
	rep := labtest.Report(t, Section, runFile, downloadFile)
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"stalled-bytes", "stalled-fast-p95", "stalled-worker-timeouts"}) {
		t.Errorf("figures %v", names)
	}
	if f := labtest.Figure(t, rep, "stalled-bytes"); !slices.Equal(f.Points, []int{5, 2, 2, 4, 1}) {
		t.Errorf("stalled-bytes: points %v; want 5 size bars, then 2 complete, 2 truncated by app_timeout, 4 by send_timeout, 1 timeout by client", f.Points)
	}
	if f := labtest.Figure(t, rep, "stalled-fast-p95"); !slices.Equal(f.Points, []int{5, 5}) {
		t.Errorf("stalled-fast-p95: points %v; want p95 and p50 for 5 conditions", f.Points)
	}
	if f := labtest.Figure(t, rep, "stalled-worker-timeouts"); !slices.Equal(f.Points, []int{5, 5}) {
		t.Errorf("stalled-worker-timeouts: points %v; want WORKER TIMEOUT lines and downloads for 5 conditions", f.Points)
	}
	if notes := strings.Join(rep.Notes, " "); strings.Contains(notes, "left out") {
		t.Errorf("notes %q, want nothing of the section left out", rep.Notes)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{
		`<td class="num">2507.0</td>`,    // direct sync-2 stalled: /fast p95 about the 3 s timeout
		`<td class="num">3.34</td>`,      // bytes received when the worker was killed
		`<td class="num">10.042</td>`,    // the async app held its worker through the stall (its download's app send)
		`<td class="num">10.04</td>`,     // and the conditions table's app_held_s
		"direct.sync-2.slow1.app3s.rep1", // the slow reader's row in the downloads table
		"context deadline exceeded",      // and its error
		"response body incomplete: 3502080 of 4194304 bytes",
		">send_timeout</td>", ">app_timeout</td>", ">client</td>",
		"<summary>Every download of the ok runs", // the downloads table, folded
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestReportWithoutDownloads: without stalled-downloads.csv the section
// keeps the figures drawn from the runs and says what it left out.
func TestReportWithoutDownloads(t *testing.T) {
	rep := labtest.Report(t, Section, runFile)
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"stalled-fast-p95", "stalled-worker-timeouts"}) {
		t.Errorf("figures %v, want the /fast p95 and worker-timeouts figures", names)
	}
	if notes := strings.Join(rep.Notes, " "); !strings.Contains(notes, "Bytes-received figure and the downloads table left out") ||
		!strings.Contains(notes, downloadFile) {
		t.Errorf("notes %q, want one saying the bytes figure was left out, naming %s", rep.Notes, downloadFile)
	}
}
