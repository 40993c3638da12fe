package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
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
	s := reporttest.ParseSVG(t, data)
	return svgStats{s.Root, s.Paths, s.Arcs, s.Fills}
}

var hexColor = reporttest.HexColor

func figureByName(t *testing.T, rep *report.Report, name string) report.Figure {
	t.Helper()
	for _, f := range rep.Figures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %q among %v", name, figureNames(rep))
	return report.Figure{}
}

func figureNames(rep *report.Report) []string {
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	return names
}

// checkFiles checks rep with Check and returns what each SVG figure
// holds.
func checkFiles(t *testing.T, rep *report.Report) map[string]svgStats {
	t.Helper()
	if err := reporttest.Check(rep); err != nil {
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
func checkHTML(t *testing.T, rep *report.Report) *html.Node {
	t.Helper()
	if err := reporttest.Check(rep); err != nil {
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
var allSections = []report.Section{standIn}
