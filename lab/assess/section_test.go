package assess

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// assessDir is a results directory holding testdata/report's
// assessment.json, edited by edit when given.
func assessDir(t *testing.T, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "report", File))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if edit != nil {
		s = edit(s)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, File), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeOnly writes dir's report with Section, checks that it drew, and
// checks its files (reporttest.Check) and that report.html parses.
func writeOnly(t *testing.T, dir string) *report.Report {
	t.Helper()
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{Name}) {
		t.Errorf("experiments %v, want %s", rep.Experiments, Name)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	data, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := html.Parse(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestWriteAssess reports an assessment (testdata/report): its section
// alone, the level figure with a series per probe (slow-readers at 1 and
// 2 clients, idle at 4, stalled-readers at 2, where every /fast request
// failed), the verdict table with the threshold, the fix and its page,
// the path's note and when /fast came back while the stalled readers
// were held.
func TestWriteAssess(t *testing.T) {
	rep := writeOnly(t, assessDir(t, nil))
	if f := labtest.Figure(t, rep, "assess-levels"); f.Series != 3 || !slices.Equal(f.Points, []int{2, 1, 1}) {
		t.Errorf("assess-levels: %d series, points %v; want slow-readers at 2 levels, idle at 1, stalled-readers at 1", f.Series, f.Points)
	}
	page, _ := os.ReadFile(rep.HTML)
	text := html.UnescapeString(string(page))
	for _, want := range []string{"assess: sync-2 direct on the real stack", "2013.4", "docs/slow-client.md",
		"not degraded with 4", "the path holds 2.5 MiB of the 16.0 MiB response", "took 41 s of its 300 s budget",
		"stalled-readers: held past the window at 2 clients, /fast came back 27.6 s after it"} {
		if !strings.Contains(text, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A level that measured no /fast request (a shard other than 0 holds
// clients only) has nothing to draw: a probe whose every level is such is
// left out of the figure, and the figure itself when no probe is left.
func TestWriteAssessNoP95(t *testing.T) {
	dir := assessDir(t, func(s string) string {
		return strings.NewReplacer(`"fast_sent": 25, "fast_ok": 25, "fast_failed": 0,`, `"fast_sent": 0, "fast_ok": 0, "fast_failed": 0,`,
			`"fast_sent": 25, "fast_ok": 0, "fast_failed": 25,`, `"fast_sent": 0, "fast_ok": 0, "fast_failed": 0,`).Replace(s)
	})
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 0 || !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "Level figure left out") }) {
		t.Errorf("figures %v, notes %q; want none and the note saying why", rep.Figures, rep.Notes)
	}
}

// An assessment.json that says something impossible is refused, naming
// the file and what is wrong, not drawn.
func TestWriteAssessRefusesCorrupt(t *testing.T) {
	dir := assessDir(t, func(s string) string {
		return strings.Replace(s, `"clients_to_degrade": 2,`, `"clients_to_degrade": 9,`, 1)
	})
	_, err := report.Write(dir, []report.Section{Section})
	if err == nil || !strings.Contains(err.Error(), File) || !strings.Contains(err.Error(), "clients_to_degrade 9") {
		t.Errorf("Write: %v, want the file and the bad threshold named", err)
	}
}

// The path's note follows the verdict the model's measured error
// allowed: uncertain says the model cannot tell, holds carries its
// margin; a file written before margins has no margin to say.
func TestWriteAssessAbsorbsVerdicts(t *testing.T) {
	for _, tc := range []struct {
		verdict, response string
		want, not         []string
	}{
		{"uncertain", "3145728", []string{"the 3.0 MiB response is within the model's measured error (-25%, +100%) of what the path holds", "the model cannot tell"},
			[]string{"the rest holds the app's send", "cannot hold a worker at this size"}},
		{"holds", "16777216", []string{"the path holds 2.5 MiB of the 16.0 MiB response", "within the model's measured error of +100%"},
			[]string{"the model cannot tell"}},
		{"", "16777216", []string{"the path holds 2.5 MiB of the 16.0 MiB response (predicted: app send 2.5m + client receive 16k)"},
			[]string{"measured error"}},
	} {
		dir := assessDir(t, func(s string) string {
			if tc.verdict == "" {
				return s
			}
			return strings.NewReplacer(`"response_bytes": 16777216, "fits": false}`,
				`"response_bytes": `+tc.response+`, "fits": false, "margin_under": 0.25, "margin_over": 1, "verdict": "`+tc.verdict+`"}`).Replace(s)
		})
		page, _ := os.ReadFile(writeOnly(t, dir).HTML)
		text := html.UnescapeString(string(page))
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("verdict %q: report.html lacks %q", tc.verdict, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(text, n) {
				t.Errorf("verdict %q: report.html has %q", tc.verdict, n)
			}
		}
	}
}
