package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// standInFile marks a results directory that standIn draws.
const standInFile = "stand-in.csv"

// standIn stands for an experiment's section in report's own tests of
// the page (report cannot import lab, where the experiments' sections
// are): a figure of one panel with a log axis and a legend, one of two
// panels, a folded table and a table.
var standIn = report.NewSection("stand-in", standInFile, func(string) (*report.Part, error) {
	p := report.NewPart("stand-in", "A section drawn by report's own tests.")
	for i, panels := range []int{1, 2} {
		d := report.NewDrawing([]string{"stand-in", "stand-in-panels"}[i], "Stand-in points", 8*vg.Inch, vg.Length(1+2*panels)*vg.Inch)
		for j := range panels {
			pl := report.NewPlot(d.Title(), "time (s)", "latency (ms, log scale)")
			report.Grid(pl, true, true)
			xys := plotter.XYs{{X: 1, Y: 2}, {X: 2, Y: 20}, {X: 3, Y: 200}}
			s := report.Scatter(xys, report.ColorAt(j), vg.Points(3))
			pl.Add(s, report.Line(xys, report.ColorAt(j)))
			pl.Legend.Add("points", s)
			report.SetLog(&pl.Y, 2, 200)
			d.AddPanel(pl)
			d.AddSeries("points", len(s.XYs))
		}
		d.SetCaption("Three points.")
		p.AddDrawing(d)
	}
	t := report.Table[int]{Caption: "Numbers.", Cols: []report.Column[int]{report.Col("n", func(n *int) report.Cell { return report.Int(*n) })}}
	report.AddTable(p, &t, []int{1, 2})
	t.Details = "Both numbers again"
	report.AddTable(p, &t, []int{1, 2})
	return p, nil
})

// writeResults writes a results directory of one session that standIn
// draws: its file and environment.json.
func writeResults(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, standInFile), []byte("n\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := recorder.Environment{Experiment: "stand-in", Stack: "embedded", StartedAt: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		Kernel: "6.1.0-test", Arch: "amd64", CPUs: 4, Go: "go1.26.0", SlowlabSHA256: "ab12",
		CgroupVersion: "v2", Limits: "none: the embedded stack runs without cgroup limits",
		Versions: map[string]string{"python3": "Python 3.11.2"}}
	if err := recorder.AppendEnvironment(dir, env); err != nil {
		t.Fatal(err)
	}
}

// TestStandIn: the stand-in section draws its figures, the second of two
// panels, and folds the table that has Details.
func TestStandIn(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, rep)
	if got := figureNames(rep); len(got) != 2 || rep.Figures[1].Panels != 2 || rep.Figures[1].Series != 2 {
		t.Errorf("figures %+v: want stand-in and stand-in-panels, the second with 2 panels", rep.Figures)
	}
	page, _ := os.ReadFile(rep.HTML)
	if n := strings.Count(string(page), "<table"); n < 3 || !strings.Contains(string(page), "<details><summary>Both numbers again</summary>") {
		t.Errorf("report.html: %d tables, want the environment's and two, the second folded", n)
	}
}
