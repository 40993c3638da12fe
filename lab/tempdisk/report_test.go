package tempdisk

import (
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab/tempcliff"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// TestReport reports a --quick temp-disk-full run on the embedded stack
// (testdata/quick: an 8 MiB tmpfs, then disk): its section alone
// (environment.json names it, though temp-cliff reads the same
// temp-runs.csv); both tmpfs downloads cut short of their 16 MiB, both on
// disk complete; the proxy's 2 error lines, the least free space the
// exporter saw and /fast p95 per temp dir, from the CSVs.
func TestReport(t *testing.T) {
	rep := labtest.ReportFrom(t, filepath.Join("testdata", "quick"), []report.Section{tempcliff.Section, Section},
		runFile, recorder.FileName[recorder.LargeResponse](), report.EnvironmentFile)
	if !slices.Equal(rep.Experiments, []string{"temp-disk-full"}) {
		t.Errorf("experiments %v, want temp-disk-full", rep.Experiments)
	}
	f := labtest.Figure(t, rep, "temp-disk-downloads")
	if f.Series != 3 || !slices.Equal(f.Points, []int{2, 2, 2}) {
		t.Errorf("temp-disk-downloads: points %v; want 2 size bars, 2 complete, 2 cut", f.Points)
	}
	b, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(b))
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
