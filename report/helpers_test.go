package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/png"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
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
	st := svgStats{fills: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse as XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if st.root == "" {
			st.root = el.Name.Local
		}
		if el.Name.Local != "path" {
			continue
		}
		st.paths++
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "d":
				if strings.Contains(a.Value, "A") {
					st.arcs++
				}
			case "style":
				for _, decl := range strings.Split(a.Value, ";") {
					if v, ok := strings.CutPrefix(decl, "fill:"); ok && v != "none" {
						st.fills[v]++
					}
				}
			}
		}
	}
	return st
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
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

// checkFiles checks that every figure's PNG decodes to its size and its
// SVG parses, and returns the SVG stats by figure name.
func checkFiles(t *testing.T, rep *Report) map[string]svgStats {
	t.Helper()
	stats := map[string]svgStats{}
	for _, f := range rep.Figures {
		if f.Title == "" || f.Caption == "" || f.Series == 0 || f.Panels == 0 {
			t.Errorf("figure %s: title %q, caption %q, %d series, %d panels", f.Name, f.Title, f.Caption, f.Series, f.Panels)
		}
		if len(f.points) != f.Series {
			t.Errorf("figure %s: %d series, %d point counts", f.Name, f.Series, len(f.points))
		}
		want := []string{"figures/" + f.Name + ".png", "figures/" + f.Name + ".svg"}
		if !slices.Equal(f.Files, want) {
			t.Errorf("figure %s: files %v, want %v", f.Name, f.Files, want)
		}
		for _, rel := range f.Files {
			data, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			switch path.Ext(rel) {
			case ".png":
				cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
				if err != nil || format != "png" || cfg.Width < 600 || cfg.Height < 300 {
					t.Errorf("%s: %s %dx%d, %v", rel, format, cfg.Width, cfg.Height, err)
				}
			case ".svg":
				st := parseSVG(t, data)
				if st.root != "svg" {
					t.Errorf("%s: root element %q, want svg", rel, st.root)
				}
				if bytes.Contains(data, []byte("http://fonts")) || bytes.Contains(data, []byte("url(http")) {
					t.Errorf("%s references the network", rel)
				}
				stats[f.Name] = st
			}
		}
	}
	return stats
}

// checkHTML parses report.html and checks that every src and href is a
// relative path to a file in the results directory (or a fragment naming
// an element), that nothing could load from elsewhere, and that every
// figure's PNG is shown.
func checkHTML(t *testing.T, rep *Report) *html.Node {
	t.Helper()
	data, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	var refs []string
	imgs := map[string]bool{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.Data {
		case "script", "link", "iframe", "object", "embed", "base":
			t.Errorf("report.html has a <%s> element", n.Data)
		case "style":
			if css := n.FirstChild; css != nil && (strings.Contains(css.Data, "url(") || strings.Contains(css.Data, "@import")) {
				t.Error("report.html's CSS loads something")
			}
		}
		for _, a := range n.Attr {
			switch a.Key {
			case "id":
				ids[a.Val] = true
			case "src", "href", "srcset", "poster", "data":
				refs = append(refs, a.Val)
				if n.Data == "img" && a.Key == "src" {
					imgs[a.Val] = true
				}
			case "style":
				if strings.Contains(a.Val, "url(") {
					t.Errorf("inline style loads something: %q", a.Val)
				}
			}
		}
	}
	if len(refs) == 0 {
		t.Fatal("report.html references nothing")
	}
	for _, ref := range refs {
		u, err := url.Parse(ref)
		if err != nil {
			t.Errorf("reference %q: %v", ref, err)
			continue
		}
		if u.Scheme != "" || u.Host != "" || strings.HasPrefix(ref, "//") || path.IsAbs(u.Path) {
			t.Errorf("reference %q is not relative to the results directory", ref)
			continue
		}
		if u.Path == "" {
			if !ids[u.Fragment] {
				t.Errorf("reference %q names no element", ref)
			}
			continue
		}
		if strings.Contains(u.Path, "..") {
			t.Errorf("reference %q leaves the results directory", ref)
		}
		if st, err := os.Stat(filepath.Join(rep.Dir, filepath.FromSlash(u.Path))); err != nil || st.IsDir() {
			t.Errorf("reference %q: not a file: %v", ref, err)
		}
	}
	for _, f := range rep.Figures {
		if !imgs[f.Files[0]] {
			t.Errorf("report.html shows no <img> for %s", f.Files[0])
		}
	}
	return doc
}

// expectedDownloads counts the fixture's downloads of ok runs: all of
// them, and those with an app_send_s.
func expectedDownloads(fx fixture) (all, withApp int) {
	for _, c := range fixtureConditions() {
		for rep := 1; rep <= fx.reps; rep++ {
			if fx.failed[runID(c, rep)] {
				continue
			}
			all += c.slow
			withApp += c.slow
			if rep == 1 && c.slow >= 2 {
				withApp-- // client 1 of rep 1 has no app_send_s
			}
		}
	}
	return all, withApp
}

// allSections is every section, in the order lab's registry gives them
// (report's tests cannot import lab, which imports report; cmd/slowlab's
// TestReportSectionsFromRegistry checks the registry's own).
var allSections = []Section{SlowClient, LongPoll, LatencyGap, BufferSweep, SlowUpload, IdleConnections, StalledReader, SSE, TempCliff, TempDiskFull, Assessment}

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
