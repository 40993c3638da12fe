package slowlabtest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/color"
	"io"
	"strings"
	"testing"
)

// SVGStats is what the report tests count in an SVG figure.
type SVGStats struct {
	Root  string         // name of the root element
	Paths int            // <path> elements
	Arcs  int            // paths with an arc: circle glyphs, which are data points (see report.Scatter)
	Fills map[string]int // filled paths by fill colour, such as "#0072B2"
}

// ParseSVG counts data's paths, arcs and fills; the test fails when data
// is not XML.
func ParseSVG(t testing.TB, data []byte) SVGStats {
	t.Helper()
	st := SVGStats{Fills: map[string]int{}}
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
	return st
}

// HexColor is c as an SVG fill names it: "#0072B2".
func HexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}
