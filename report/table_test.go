package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

type pet struct {
	Name string
	Legs int
	Mass recorder.Maybe
}

var pets = report.Table[pet]{
	Caption: "pets",
	Legend:  []string{"mass_kg: - where not weighed"},
	Cols: []report.Column[pet]{
		report.Col("name", func(p *pet) report.Cell { return report.Text(p.Name) }),
		report.Col("legs", func(p *pet) report.Cell { return report.Int(p.Legs) }),
		report.Col("mass_kg", func(p *pet) report.Cell { return report.Opt(p.Mass, report.Decimals(1)) }),
	},
}

// petsPage writes the report of a results directory with pets.csv and a
// pets section, "Pets, counted.", that add fills; it returns the report
// and report.html.
func petsPage(t *testing.T, add func(*report.Part)) (*report.Report, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pets.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sec := report.NewSection("pets", "pets.csv", func(string) (*report.Part, error) {
		p := report.NewPart("pets", "Pets, counted.")
		add(p)
		return p, nil
	})
	rep, err := report.Write(dir, []report.Section{sec})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	return rep, string(page)
}

// TestTableDeclaredOnce: a section declared outside report with
// NewSection, NewPart and AddTable is drawn in report.html, and the
// table's HTML header is its text header; the text aligns numbers right,
// text left, and shows a value not measured as "-".
func TestTableDeclaredOnce(t *testing.T) {
	rows := []pet{{"dog", 4, recorder.Some(31.25)}, {"centipede", 42, recorder.None()}}
	var b bytes.Buffer
	pets.WriteText(&b, rows)
	want := "name      legs mass_kg\n" +
		"dog          4    31.2\n" +
		"centipede   42       -\n" +
		"mass_kg: - where not weighed\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}

	rep, page := petsPage(t, func(p *report.Part) {
		report.AddTable(p, &pets, rows)
		p.Skip("no photos")
	})
	var head []string
	for _, m := range regexp.MustCompile(`<th>([^<]*)</th>`).FindAllStringSubmatch(page, -1) {
		head = append(head, m[1])
	}
	if text := strings.Fields(strings.SplitN(b.String(), "\n", 2)[0]); !slices.Equal(head, text) {
		t.Errorf("HTML header %q, text header %q: want the same", head, text)
	}
	for _, w := range []string{"Pets, counted.", "<td class=\"num\">31.2</td>", `title="not measured"`, "mass_kg: - where not weighed", "no photos"} {
		if !strings.Contains(page, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if !slices.Equal(rep.Experiments, []string{"pets"}) || !slices.Contains(rep.Notes, "no photos") {
		t.Errorf("report %+v: want the pets section and its note", rep)
	}
}

// TestFastLatencyLeavesOutUnmeasured: a condition without an ok run has
// no /fast latency and no row of the figure; with none measured the part
// says so instead of drawing an empty figure.
func TestFastLatencyLeavesOutUnmeasured(t *testing.T) {
	measured := recorder.FastOver{FastPlanned: 8, FastOK: 8, P50MS: recorder.Some(2), P95MS: recorder.Some(9), P95MinMS: recorder.Some(8), P95MaxMS: recorder.Some(11)}
	if r, ok := report.LatencyOf("a", measured); !ok || r != (report.LatencyRow{Label: "a", P95: 9, P95Min: 8, P95Max: 11, P50: 2}) {
		t.Errorf("measured: %+v %v", r, ok)
	}
	if _, ok := report.LatencyOf("b", recorder.FastOver{FastPlanned: 8}); ok {
		t.Error("a condition without an ok run has a row")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pets.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		conds   []recorder.FastOver
		figures int
	}{{[]recorder.FastOver{measured, {}}, 1}, {[]recorder.FastOver{{}}, 0}} {
		sec := report.NewSection("pets", "pets.csv", func(string) (*report.Part, error) {
			p := report.NewPart("pets", "")
			report.AddFastLatencyOf(p, "pets-fast", "/fast beside pets", tc.conds,
				func(*recorder.FastOver) string { return "pet" }, func(f *recorder.FastOver) *recorder.FastOver { return f })
			return p, nil
		})
		rep, err := report.Write(dir, []report.Section{sec})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Figures) != tc.figures || (tc.figures == 0) != slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "no figure") }) {
			t.Errorf("%d conditions: %d figures, notes %q: want %d figures, a note without one", len(tc.conds), len(rep.Figures), rep.Notes, tc.figures)
		}
	}
}

// TestHTMLCol: a column declared with HTMLCol is drawn in the report and
// left out of the text; AddFoldedTable folds the table under its summary.
func TestHTMLCol(t *testing.T) {
	tagged := pets
	tagged.Cols = append([]report.Column[pet]{report.HTMLCol("tag", func(p *pet) report.Cell { return report.Text("tag-" + p.Name) })}, pets.Cols...)
	rows := []pet{{"dog", 4, recorder.Some(31.25)}}
	var text, plain bytes.Buffer
	tagged.WriteText(&text, rows)
	pets.WriteText(&plain, rows)
	if text.String() != plain.String() {
		t.Errorf("text with an HTMLCol:\n%s\nwant it without:\n%s", text.String(), plain.String())
	}
	_, page := petsPage(t, func(p *report.Part) { report.AddFoldedTable(p, &tagged, rows, "every pet") })
	for _, w := range []string{"<th>tag</th>", "<td>tag-dog</td>", "<summary>every pet</summary>"} {
		if !strings.Contains(page, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}
