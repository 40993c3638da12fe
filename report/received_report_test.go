package report_test

import (
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/report"
)

// TestReceivedBytesDrawn: ReceivedFixture's figure in a report has the
// size bars in the fill given, a series per kind that has downloads with
// its point count, circles only for the kind without a shape, and the
// downloads left out in the caption; the files pass checkFiles.
func TestReceivedBytesDrawn(t *testing.T) {
	r := report.ReceivedFixture()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pets.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sec := report.NewSection("pets", "pets.csv", func(string) (*report.Part, error) {
		p := report.NewPart("pets", "")
		p.AddDrawing(r.Drawing())
		return p, nil
	})
	rep, err := report.Write(dir, []report.Section{sec})
	if err != nil {
		t.Fatal(err)
	}
	st := checkFiles(t, rep)["pets-bytes"]
	fig := figureByName(t, rep, "pets-bytes")
	if fig.Series != 3 || !slices.Equal(fig.Points, []int{2, 2, 2}) {
		t.Errorf("%d series, points %v; want response size, whole and cut with 2, 2, 2", fig.Series, fig.Points)
	}
	if want := "Every pet's bytes. 4 downloads of runs that did not end ok are left out."; fig.Caption != want {
		t.Errorf("caption %q, want %q", fig.Caption, want)
	}
	// Each filled mark and bar, plus its legend thumbnail (a triangle is
	// stroked).
	if st.arcs != 2+1 {
		t.Errorf("%d circles, want the 2 whole downloads and a legend glyph", st.arcs)
	}
	for c, want := range map[color.Color]int{color.Gray{0xea}: 2 + 1, report.ColorAt(0): 2 + 1} {
		if got := st.fills[hexColor(c)]; got != want {
			t.Errorf("%d paths filled %s, want %d", got, hexColor(c), want)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(fig.Files[1])))
	if err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]bool{">row-a<": true, ">row-c<": true, ">row-b<": false, ">never<": false} {
		if strings.Contains(string(svg), label) != want {
			t.Errorf("SVG has %s: %v, want %v", label, !want, want)
		}
	}
}
