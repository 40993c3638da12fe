package slowupload

import (
	"html"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
)

// TestReport reports a --quick slow-upload run on the embedded stack
// (testdata): both figures with a point per drawable condition, and the
// reset upload of the timeout condition in the table of uploads that did
// not end ok.
func TestReport(t *testing.T) {
	rep := labtest.Report(t, Section, runFile, uploadFile)
	// Six conditions have /fast latencies; the timeout condition's only
	// upload was reset, so five have upload times.
	if f := labtest.Figure(t, rep, "upload-fast-p95"); f.Series != 2 || !slices.Equal(f.Points, []int{6, 6}) {
		t.Errorf("upload-fast-p95: %d series, points %v; want p95 and p50 with 6 each", f.Series, f.Points)
	}
	if f := labtest.Figure(t, rep, "upload-times"); f.Series != 2 || !slices.Equal(f.Points, []int{5, 5}) {
		t.Errorf("upload-times: %d series, points %v; want send and read with 5 each", f.Series, f.Points)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"direct.sync-2.up1.10m.timeout10s.rep1", ">reset</td>", "unexpected EOF", "proxy-request-buffering-on"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestReportWithoutUploads: without uploads.csv the section still has its
// figures and says what it left out.
func TestReportWithoutUploads(t *testing.T) {
	rep := labtest.Report(t, Section, runFile)
	if len(rep.Figures) != 2 || len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, " "), uploadFile) {
		t.Errorf("figures %d, notes %q: want 2 figures and a note naming %s", len(rep.Figures), rep.Notes, uploadFile)
	}
}
