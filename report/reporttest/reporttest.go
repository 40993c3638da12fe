// Package reporttest holds the check every report test runs on what
// report.Write produced (Check: each figure's fields and files, a page
// that loads nothing and references only the results directory) and
// CountSVG (ParseSVG, HexColor), which count a figure's SVG elements for
// a test. package
// report itself keeps only what draws the figures and writes the page.
package reporttest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/png" // PNG figures are decoded
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/report"
)

// Check verifies what report.Write produced, as the tests of every section hold
// it: each figure has a title, a caption, series, panels and a point count
// per series, and its PNG (at least 600x300) and SVG (an <svg> that loads
// nothing from the network) are in the figures folder; report.html loads
// nothing (no script, link, frame or object, no CSS url or @import), every
// reference in it is relative and names a file in the results directory
// or an element of the page, and it shows every figure. The errors are
// joined; nil when there is none.
func Check(rep *report.Report) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, f := range rep.Figures {
		if f.Title == "" || f.Caption == "" || f.Series == 0 || f.Panels == 0 || len(f.Points) != f.Series {
			bad("figure %s: title %q, caption %q, %d series, %d panels, %d point counts", f.Name, f.Title, f.Caption, f.Series, f.Panels, len(f.Points))
		}
		for i, a := range f.Axes {
			if a.Title == "" || a.X == "" || a.Y == "" {
				bad("figure %s panel %d: title %q, x %q, y %q: want all three", f.Name, i, a.Title, a.X, a.Y)
			}
		}
		if want := []string{"figures/" + f.Name + ".png", "figures/" + f.Name + ".svg"}; len(f.Files) != 2 || f.Files[0] != want[0] || f.Files[1] != want[1] {
			bad("figure %s: files %v, want %v", f.Name, f.Files, want)
			continue
		}
		for _, rel := range f.Files {
			data, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(rel)))
			if err != nil {
				bad("figure %s: %w", f.Name, err)
				continue
			}
			if path.Ext(rel) == ".png" {
				cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
				if err != nil || format != "png" || cfg.Width < 600 || cfg.Height < 300 {
					bad("%s: %s %dx%d, %v", rel, format, cfg.Width, cfg.Height, err)
				}
				continue
			}
			if st, err := CountSVG(data); err != nil || st.Root != "svg" {
				bad("%s: root element %q (%v), want svg", rel, st.Root, err)
			}
			if bytes.Contains(data, []byte("http://fonts")) || bytes.Contains(data, []byte("url(http")) {
				bad("%s references the network", rel)
			}
		}
	}
	if err := checkPage(rep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SVGCount is what a test counts in a figure's SVG file.
type SVGCount struct {
	Root  string         // name of the root element
	Paths int            // <path> elements
	Arcs  int            // paths with an arc: circle glyphs, which are data points (see Scatter)
	Fills map[string]int // filled paths by fill colour, such as "#0072B2"
}

// ParseSVG is CountSVG for a test, which fails when data is not XML.
func ParseSVG(t testing.TB, data []byte) SVGCount {
	t.Helper()
	st, err := CountSVG(data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// HexColor is c as an SVG fill names it: "#0072B2".
func HexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// CountSVG counts the elements of an SVG file's data.
func CountSVG(data []byte) (SVGCount, error) {
	st := SVGCount{Fills: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("SVG does not parse as XML: %w", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if st.Root == "" {
			st.Root = el.Name.Local
		}
		if el.Name.Local != "path" {
			continue
		}
		st.Paths++
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "d":
				if strings.Contains(a.Value, "A") {
					st.Arcs++
				}
			case "style":
				for _, decl := range strings.Split(a.Value, ";") {
					if v, ok := strings.CutPrefix(decl, "fill:"); ok && v != "none" {
						st.Fills[v]++
					}
				}
			}
		}
	}
}

// checkPage is Check's part for report.html.
func checkPage(rep *report.Report) error {
	data, err := os.ReadFile(rep.HTML)
	if err != nil {
		return err
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return err
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	ids, imgs := map[string]bool{}, map[string]bool{}
	var refs []string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.Data {
		case "script", "link", "iframe", "object", "embed", "base":
			bad("report.html has a <%s> element", n.Data)
		case "style":
			if css := n.FirstChild; css != nil && (strings.Contains(css.Data, "url(") || strings.Contains(css.Data, "@import")) {
				bad("report.html's CSS loads something")
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
					bad("inline style loads something: %q", a.Val)
				}
			}
		}
	}
	if len(refs) == 0 {
		bad("report.html references nothing")
	}
	for _, ref := range refs {
		u, err := url.Parse(ref)
		switch {
		case err != nil:
			bad("reference %q: %v", ref, err)
		case u.Scheme != "" || u.Host != "" || strings.HasPrefix(ref, "//") || path.IsAbs(u.Path):
			bad("reference %q is not relative to the results directory", ref)
		case u.Path == "":
			if !ids[u.Fragment] {
				bad("reference %q names no element", ref)
			}
		case strings.Contains(u.Path, ".."):
			bad("reference %q leaves the results directory", ref)
		default:
			if st, err := os.Stat(filepath.Join(rep.Dir, filepath.FromSlash(u.Path))); err != nil || st.IsDir() {
				bad("reference %q: not a file: %v", ref, err)
			}
		}
	}
	for _, f := range rep.Figures {
		if len(f.Files) > 0 && !imgs[f.Files[0]] {
			bad("report.html shows no <img> for %s", f.Files[0])
		}
	}
	return errors.Join(errs...)
}
