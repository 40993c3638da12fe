package assess

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
)

// svgStroke is a stroked path of an SVG: its colour, whether it is
// dashed, and its vertices (gonum's SVG writes straight segments only as
// M and L).
type svgStroke struct {
	colour string
	dashed bool
	pts    [][2]float64
}

// svgLabel is a text element of an SVG: its content, fill colour and y.
type svgLabel struct {
	text, fill string
	y          float64
}

// svgShapes returns the stroked straight paths and the texts of an SVG.
func svgShapes(t *testing.T, data []byte) (strokes []svgStroke, texts []svgLabel) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return strokes, texts
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		var d, style, y string
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "d":
				d = a.Value
			case "style":
				style = a.Value
			case "y":
				y = a.Value
			}
		}
		decl := map[string]string{}
		for _, kv := range strings.Split(style, ";") {
			if k, v, ok := strings.Cut(kv, ":"); ok {
				decl[k] = v
			}
		}
		switch el.Name.Local {
		case "text":
			var s string
			if err := dec.DecodeElement(&s, &el); err != nil {
				t.Fatal(err)
			}
			yv, _ := strconv.ParseFloat(y, 64)
			texts = append(texts, svgLabel{s, decl["fill"], yv})
		case "path":
			if decl["stroke"] == "" || strings.ContainsAny(d, "ACZ") {
				continue
			}
			st := svgStroke{colour: decl["stroke"], dashed: decl["stroke-dasharray"] != ""}
			for _, seg := range strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' }) {
				xs, ys, _ := strings.Cut(seg, ",")
				x, errX := strconv.ParseFloat(xs, 64)
				y, errY := strconv.ParseFloat(ys, 64)
				if errX != nil || errY != nil {
					t.Fatalf("path %q: vertex %q", d, seg)
				}
				st.pts = append(st.pts, [2]float64{x, y})
			}
			strokes = append(strokes, st)
		}
	}
}

// near says whether two SVG coordinates agree to the file's precision.
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// slowReadersFailed edits testdata/report so that slow-readers degraded
// at 2 clients with every /fast request failed (no p95), the usual way a
// sync-2 app degrades; timeout is its fast_timeout_ms, none when "" (and
// then neither has the stalled readers' failed level one).
func slowReadersFailed(t *testing.T, timeout string) func(string) string {
	field, stalled := "", ""
	if timeout != "" {
		field, stalled = ` "fast_timeout_ms": `+timeout+`,`, ` "fast_timeout_ms": 1004.6,`
	}
	return func(s string) string {
		s = strings.NewReplacer(
			`"fast_p95_ms_at_degrade": 2013.4,
      "fast_failed_at_degrade": 0,`, `"fast_p95_ms_at_degrade": null,
      "fast_failed_at_degrade": 25,`,
			`"fast_sent": 25, "fast_ok": 25, "fast_failed": 0, "fast_p50_ms": 980.5, "fast_p95_ms": 2013.4, "fast_max_ms": 2100.7, "degraded": "/fast p95 2013.4 ms over 502.6 ms"`,
			`"fast_sent": 25, "fast_ok": 0, "fast_failed": 25, "fast_p50_ms": 0, "fast_p95_ms": 0, "fast_max_ms": 0,`+field+` "degraded": "25 of 25 /fast requests failed"`,
			`"fast_max_ms": 0, "degraded": "25 of 25 /fast requests failed", "client_ends": {"bound": 2}`,
			`"fast_max_ms": 0,`+stalled+` "degraded": "25 of 25 /fast requests failed", "client_ends": {"bound": 2}`,
		).Replace(s)
		if strings.Count(s, `"fast_failed_at_degrade": 25,`) != 2 || strings.Count(s, `"fast_ok": 0, "fast_failed": 25,`) != 2 {
			t.Fatal("testdata/report: slow-readers' level of 2 clients is not where the edit expects it")
		}
		return s
	}
}

// TestAssessFigureFailedLevel: a level where every /fast request failed
// has no p95, yet it decided the verdict, so the figure draws it: the
// probe's line runs from its level of 1 client to a cross at 2 clients
// labelled "25/25 failed", at the level's /fast timeout when
// assessment.json records it (placed on the figure's log scale by the 1
// client p95 and the threshold line), else on the ceiling's dotted line
// named in the caption, where stalled-readers' failed level of 2 also
// sits: its label goes a line away from slow-readers'.
func TestAssessFigureFailedLevel(t *testing.T) {
	const blue, green, grey = "#0072B2", "#009E73", "#888888" // slow-readers, stalled-readers, the ceiling
	for _, tc := range []struct{ name, timeout string }{{"timeout recorded", "1005.2"}, {"timeout not recorded", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			rep := writeOnly(t, assessDir(t, slowReadersFailed(t, tc.timeout)))
			f := labtest.Figure(t, rep, "assess-levels")
			if f.Series != 3 || f.Points[0] != 2 {
				t.Errorf("%d series, points %v; want slow-readers at both its levels", f.Series, f.Points)
			}
			data, err := os.ReadFile(filepath.Join(rep.Dir, "figures", "assess-levels.svg"))
			if err != nil {
				t.Fatal(err)
			}
			strokes, texts := svgShapes(t, data)
			var threshold, ceiling, data1 *svgStroke
			var cross [][2]float64 // the centres of blue single diagonal strokes
			for i, s := range strokes {
				switch {
				case s.colour == blue && s.dashed:
					threshold = &strokes[i]
				case s.colour == blue && len(s.pts) == 2 && s.pts[0][0] != s.pts[1][0] &&
					near(math.Abs(s.pts[1][0]-s.pts[0][0]), math.Abs(s.pts[1][1]-s.pts[0][1]), 0.02):
					cross = append(cross, [2]float64{(s.pts[0][0] + s.pts[1][0]) / 2, (s.pts[0][1] + s.pts[1][1]) / 2})
				}
			}
			if threshold == nil {
				t.Fatal("no dashed threshold line of slow-readers")
			}
			for i, s := range strokes { // the data and ceiling lines start where the threshold line does, at 1 client
				from1 := len(s.pts) >= 2 && near(s.pts[0][0], threshold.pts[0][0], 0.01)
				switch {
				case from1 && s.colour == blue && !s.dashed:
					data1 = &strokes[i]
				case from1 && s.colour == grey && s.dashed:
					ceiling = &strokes[i]
				}
			}
			if data1 == nil || len(cross) != 2 || !near(cross[0][0], cross[1][0], 0.01) || !near(cross[0][1], cross[1][1], 0.01) {
				t.Fatalf("slow-readers: line %v, cross centres %v; want a line from 1 client and one cross", data1, cross)
			}
			end := data1.pts[len(data1.pts)-1]
			if len(data1.pts) != 2 || !near(end[0], cross[0][0], 0.01) || !near(end[1], cross[0][1], 0.01) ||
				!near(end[0], threshold.pts[1][0], 0.01) {
				t.Errorf("slow-readers' line %v ends off its cross %v at 2 clients (x %.2f)", data1.pts, cross[0], threshold.pts[1][0])
			}
			// SVG y grows upwards here (gonum flips the canvas).
			if end[1] <= threshold.pts[0][1] {
				t.Errorf("failed level drawn at y %.2f, under the threshold line at %.2f", end[1], threshold.pts[0][1])
			}
			if tc.timeout != "" {
				// log10 p95 is linear in y: 3.0 ms at the line's start, 502.6 ms on the threshold line.
				y0, y1 := data1.pts[0][1], threshold.pts[0][1]
				want := y0 + (math.Log(1005.2)-math.Log(3.0))/(math.Log(502.6)-math.Log(3.0))*(y1-y0)
				if !near(end[1], want, 0.1) {
					t.Errorf("failed level drawn at y %.2f, want %.2f: its timeout, 1005.2 ms", end[1], want)
				}
				if ceiling != nil || strings.Contains(f.Caption, "a ceiling") {
					t.Errorf("a ceiling drawn (%v) or captioned (%q) with every timeout recorded", ceiling, f.Caption)
				}
			} else if ceiling == nil || !near(ceiling.pts[0][1], end[1], 0.01) || !strings.Contains(f.Caption, "a ceiling, not a measurement") {
				t.Errorf("ceiling %v, failed level at y %.2f, caption %q; want it on the ceiling the caption names", ceiling, end[1], f.Caption)
			}
			// Both probes failed at 2 clients: stalled-readers' label is
			// a line away from slow-readers', not over it.
			label := map[string]float64{}
			for _, tx := range texts {
				if tx.text == "25/25 failed" {
					label[tx.fill] = tx.y
				}
			}
			yb, okb := label[blue]
			yg, okg := label[green]
			if !okb || !okg || (tc.timeout == "" && math.Abs(yb-yg) < 8) {
				t.Errorf("labels \"25/25 failed\" at y %v by colour; want slow-readers' and stalled-readers', apart", label)
			}
		})
	}
}
