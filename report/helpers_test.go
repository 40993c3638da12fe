package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// svgStats is what the tests count in an SVG file.
type svgStats struct {
	root  string         // name of the root element
	paths int            // <path> elements
	arcs  int            // paths with an arc: circle glyphs, which are data points (see scatter)
	fills map[string]int // filled paths by fill colour, such as "#0072B2"
}

func parseSVG(t *testing.T, data []byte) svgStats {
	t.Helper()
	s := slowlabtest.ParseSVG(t, data)
	return svgStats{s.Root, s.Paths, s.Arcs, s.Fills}
}

var hexColor = slowlabtest.HexColor

// create creates dir's file of row type T, failing t if it cannot.
func create[T recorder.Row[T]](t testing.TB, dir string) *recorder.FileWriter[T] {
	return recordertest.Create[T](t, dir)
}

func figureByName(t *testing.T, rep *Report, name string) Figure {
	t.Helper()
	for _, f := range rep.Figures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %q among %v", name, figureNames(rep))
	return Figure{}
}

func figureNames(rep *Report) []string {
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	return names
}

func sum(vs []int) int {
	n := 0
	for _, v := range vs {
		n += v
	}
	return n
}

// checkFiles checks rep with Check and returns what each SVG figure
// holds.
func checkFiles(t *testing.T, rep *Report) map[string]svgStats {
	t.Helper()
	if err := Check(rep); err != nil {
		t.Error(err)
	}
	stats := map[string]svgStats{}
	for _, f := range rep.Figures {
		if len(f.Files) == 2 {
			data, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(f.Files[1])))
			if err != nil {
				t.Fatal(err)
			}
			stats[f.Name] = parseSVG(t, data)
		}
	}
	return stats
}

// checkHTML checks rep with Check and parses report.html.
func checkHTML(t *testing.T, rep *Report) *html.Node {
	t.Helper()
	if err := Check(rep); err != nil {
		t.Error(err)
	}
	data, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// allSections is what report's own tests draw: the stand-in (report's
// tests cannot import lab, where the experiments' sections are;
// cmd/slowlab's TestReportSectionsFromRegistry checks the registry's).
var allSections = []Section{standIn}

// writeOnly writes dir's report with every section, checks that only the
// section named drew, and checks its files and HTML.
func writeOnly(t *testing.T, dir, section string) *Report {
	t.Helper()
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{section}) {
		t.Errorf("experiments %v, want %s", rep.Experiments, section)
	}
	checkFiles(t, rep)
	checkHTML(t, rep)
	return rep
}
