package buffersweep

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/report"
)

// routeShapes are the prediction figure's markers, by route: filled for
// the cells with size > predicted capacity, hollow for the others.
var routeShapes = []struct{ filled, hollow draw.GlyphDrawer }{
	{draw.CircleGlyph{}, draw.RingGlyph{}},
	{draw.PyramidGlyph{}, draw.TriangleGlyph{}},
	{draw.BoxGlyph{}, draw.SquareGlyph{}},
	{draw.CrossGlyph{}, draw.PlusGlyph{}},
}

// predictionFigure draws each cell's measured app send time against the
// model's prediction, max(0, size - capacity) / rate with the capacity
// predicted from configuration: full colour where size > that capacity,
// light where the model says the path holds the whole response; nil and
// the reason when no cell has both.
func predictionFigure(sw *sweepDir) (*report.Drawing, string) {
	var routes []string
	above, within := map[string]plotter.XYs{}, map[string]plotter.XYs{}
	var left []string
	hi := 0.0
	for _, c := range sw.cells {
		if !c.AppSendMeasuredS.Valid || !c.AppSendPredictedS.Valid || !c.CapacityPredictedBytes.Valid {
			left = append(left, fmt.Sprintf("%s %s at %s (kernel %s)", c.Route, report.SizeText(c.SizeBytes), rateText(c.RateBps), c.Kernel))
			continue
		}
		if _, seen := above[c.Route]; !seen {
			routes = append(routes, c.Route)
			above[c.Route] = plotter.XYs{}
		}
		xy := plotter.XY{X: c.AppSendPredictedS.Value, Y: c.AppSendMeasuredS.Value}
		if float64(c.SizeBytes) > c.CapacityPredictedBytes.Value {
			above[c.Route] = append(above[c.Route], xy)
		} else {
			within[c.Route] = append(within[c.Route], xy)
		}
		hi = math.Max(hi, math.Max(xy.X, xy.Y))
	}
	if len(routes) == 0 {
		return nil, "no cell has both a measured and a predicted app send time"
	}
	d := report.NewDrawing("buffer-sweep-send-predicted", "Measured against predicted app send time per cell", 8*vg.Inch, 6*vg.Inch)
	p := report.NewPlot(d.Title(), "predicted app_send = max(0, size − predicted capacity) / rate (s)", "measured app_send (s)")
	report.Grid(p, true, true)
	hi = math.Max(hi, 0.1) * 1.08
	addPredictionReferences(p, hi)
	// Routes in report order, so their colours match from run to run.
	slices.SortStableFunc(routes, slowclient.CompareRoutes)
	nWithin := 0
	for i, route := range routes {
		shape := routeShapes[i%len(routeShapes)]
		for _, part := range []struct {
			xys   plotter.XYs
			glyph draw.GlyphDrawer
			name  string
		}{{above[route], shape.filled, route + ", size > predicted capacity"}, {within[route], shape.hollow, route + ", size ≤ predicted capacity"}} {
			if len(part.xys) > 0 {
				s := report.Scatter(part.xys, report.ColorAt(i), vg.Points(3.5))
				s.GlyphStyle.Shape = part.glyph
				p.Add(s)
				p.Legend.Add(part.name, s)
				d.AddSeries(part.name, len(s.XYs))
			}
		}
		nWithin += len(within[route])
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, hi, 0, hi
	p.Legend.Left = true
	d.AddPanel(p)
	caption := "Point = one cell of " + sweepFile + ", every kernel setting. x = the predicted send time, " +
		"max(0, size − C) / R, with C the path's capacity predicted before the run from configuration only " +
		"(capacity_predicted_bytes: the app's send buffer as the kernel sizes it, the proxy's buffers and sockets on " +
		"proxied routes, the client's receive buffer) and R the slow read rate; y = the measured app send time " +
		"(app_send_measured_s: the app's time to hand the whole response to its socket, from its send log), median over " +
		"the cell's downloads. Colour and marker: route. Filled: size > C, the cells the prediction says hold the app; " +
		"hollow: size ≤ C (prediction 0). Solid line: measured = predicted; dashed: ±20%."
	if nWithin == 0 {
		caption += " No cell has size ≤ C."
	}
	if len(left) > 0 {
		caption += fmt.Sprintf(" Not drawn, no observed or no predicted send time: %s.", strings.Join(left, "; "))
	}
	d.SetCaption(caption)
	return d, ""
}

// addPredictionReferences draws measured = predicted (solid) and ±20%
// (dashed) across a plot whose axes run from 0 to hi.
func addPredictionReferences(p *plot.Plot, hi float64) {
	// ref is the line y = slope * x across the plot.
	ref := func(slope float64, dashed bool) *plotter.Line {
		end := math.Min(hi, hi/slope)
		l := report.Line(plotter.XYs{{X: 0, Y: 0}, {X: end, Y: slope * end}}, color.Gray{0x66})
		l.LineStyle.Width = vg.Points(0.75)
		if dashed {
			l.LineStyle.Color = color.Gray{0xaa}
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		return l
	}
	diag := ref(1, false)
	plus, minus := ref(1.2, true), ref(0.8, true)
	p.Add(diag, plus, minus)
	p.Legend.Add("measured = predicted", diag)
	p.Legend.Add("±20%", plus)
}
