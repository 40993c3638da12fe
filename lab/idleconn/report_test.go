package idleconn

import (
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// TestReport reports a --quick idle-connections run on the embedded stack
// (testdata/idle-runs.csv): the figure with a held-time bar for each run
// in which the server closed connections (not the two direct gthread
// runs: every connection lasted to the bound) and a /fast p95 bar for
// each run, and the runs table; labtest.Report checks the files and the
// page.
func TestReport(t *testing.T) {
	rep := labtest.Report(t, Section, runFile)
	if len(rep.Figures) != 1 || rep.Figures[0].Name != "idle-held" || !slices.Equal(rep.Figures[0].Points, []int{6, 8}) {
		t.Errorf("figures %+v: want idle-held with held time for 6 runs and /fast p95 for 8", rep.Figures)
	}
	page, _ := os.ReadFile(rep.HTML)
	for _, want := range []string{"proxy-buffering-on", "slowloris", "72/72", "<th>closed_s</th>"} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestCheckFindsFaults: reporttest.Check fails a report whose PNG is gone,
// whose SVG is not XML, whose page loads a script or references a file
// outside the directory, and passes the report as written.
func TestCheckFindsFaults(t *testing.T) {
	write := func(t *testing.T) *report.Report {
		dir := t.TempDir()
		b, err := os.ReadFile(filepath.Join("testdata", runFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, runFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := report.Write(dir, []report.Section{Section})
		if err != nil {
			t.Fatal(err)
		}
		if err := reporttest.Check(rep); err != nil {
			t.Fatalf("as written: %v", err)
		}
		return rep
	}
	edit := func(t *testing.T, file string, f func([]byte) []byte) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, want string
		break_     func(t *testing.T, rep *report.Report)
	}{
		{"png gone", "idle-held.png", func(t *testing.T, rep *report.Report) {
			os.Remove(filepath.Join(rep.Dir, "figures", "idle-held.png"))
		}},
		{"svg not xml", "want svg", func(t *testing.T, rep *report.Report) {
			edit(t, filepath.Join(rep.Dir, "figures", "idle-held.svg"), func([]byte) []byte { return []byte("not xml <") })
		}},
		{"script", "<script> element", func(t *testing.T, rep *report.Report) {
			edit(t, rep.HTML, func(b []byte) []byte {
				return []byte(strings.Replace(string(b), "</body>", "<script>alert(1)</script></body>", 1))
			})
		}},
		{"outside", "leaves the results directory", func(t *testing.T, rep *report.Report) {
			edit(t, rep.HTML, func(b []byte) []byte {
				return []byte(strings.Replace(string(b), `src="figures/idle-held.png"`, `src="../x.png"`, 1))
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := write(t)
			tc.break_(t, rep)
			if err := reporttest.Check(rep); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
