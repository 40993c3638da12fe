package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ReceivedBytes is a figure of the bytes each download received, a row
// per condition: its response's size as a bar and each of its downloads
// as a mark over it at the bytes it received (MiB), shaped and coloured
// by the download's kind, the downloads of a row spread vertically so
// that equal byte counts stay visible.
type ReceivedBytes struct {
	Name, Title, Caption string
	XLabel               string    // the value axis's label
	Width                vg.Length // the figure's width
	Taller               vg.Length // height added to the rows' (RowsHeight), for a long legend
	// Room is how far the value axis runs past the largest size or
	// download, as a factor: room on the right for the legend.
	Room float64
	// SizeLine and SizeFill are the size bars' outline and fill; a nil
	// SizeFill is a lighter SizeLine, as NewBars fills.
	SizeLine, SizeFill color.Color
	Kinds              []DownloadKind // how each kind of download is marked, in legend order
	Rows               []DownloadRow  // the conditions, top first; one without downloads is not drawn
	// Left counts the downloads left out (of runs that did not end ok),
	// which the caption says when there are any.
	Left int
}

// DownloadKind is how ReceivedBytes marks a kind of download: its legend
// name, its colour and its shape (nil: a filled circle, as Scatter draws;
// any other shape as Marks draws).
type DownloadKind struct {
	Name  string
	Color color.Color
	Shape draw.GlyphDrawer
}

// DownloadRow is a condition of ReceivedBytes: its label, its response's
// size in bytes and its downloads in order.
type DownloadRow struct {
	Label     string
	Size      int64
	Downloads []Received
}

// Received is a download of a DownloadRow: the body bytes it received
// and its kind, an index into the figure's Kinds.
type Received struct {
	Bytes int64
	Kind  int
}

// mib is n bytes in MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// figure draws r; nil when no row has a download. A download whose kind is not one of Kinds is the caller's bug:
// a panic naming it.
func (r *ReceivedBytes) figure() *figure {
	var rows []DownloadRow
	hi := 0.0
	for _, row := range r.Rows {
		if len(row.Downloads) == 0 {
			continue
		}
		rows = append(rows, row)
		hi = math.Max(hi, mib(row.Size))
		for _, d := range row.Downloads {
			if d.Kind < 0 || d.Kind >= len(r.Kinds) {
				panic(fmt.Sprintf("report: figure %s: a download of %q is of kind %d, not one of the %d kinds", r.Name, row.Label, d.Kind, len(r.Kinds)))
			}
			hi = math.Max(hi, mib(d.Bytes))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: r.Name, title: r.Title, width: r.Width, height: RowsHeight(len(rows)) + r.Taller}
	p := NewPlot(f.title, r.XLabel, "condition")
	Grid(p, true, false)
	labels := make([]string, len(rows))
	sizes := make([]float64, len(rows))
	for j, row := range rows {
		labels[j], sizes[j] = row.Label, mib(row.Size)
	}
	ys := ConditionRows(p, labels)
	sb := NewBars(ys, sizes, 0.7, true, r.SizeLine)
	if r.SizeFill != nil {
		sb.Fill = r.SizeFill
	}
	p.Add(sb)
	p.Legend.Add("response size", sb)
	f.addSeries("response size", sb.Drawn())
	for k, kind := range r.Kinds {
		var xys plotter.XYs
		for j, row := range rows {
			for i, d := range row.Downloads {
				if d.Kind != k {
					continue
				}
				dy := 0.0
				if n := len(row.Downloads); n > 1 {
					dy = (float64(i)/float64(n-1) - 0.5) * 0.5
				}
				xys = append(xys, plotter.XY{X: mib(d.Bytes), Y: ys[j] + dy})
			}
		}
		if len(xys) == 0 {
			continue
		}
		m := Scatter(xys, kind.Color, vg.Points(3.5))
		if kind.Shape != nil {
			m = Marks(xys, kind.Color, kind.Shape)
		}
		f.addPoints(p, kind.Name, m)
	}
	p.X.Min, p.X.Max = 0, hi*r.Room
	f.panels = append(f.panels, p)
	f.caption = r.Caption
	if r.Left > 0 {
		are := "are"
		if r.Left == 1 {
			are = "is"
		}
		f.caption += fmt.Sprintf(" %s of runs that did not end ok %s left out.", Count(r.Left, "download"), are)
	}
	return f
}

// Drawing is r drawn, for the part of the caller (AddDrawing); nil when
// no row has a download (the caller says what was left out, with Skip).
func (r *ReceivedBytes) Drawing() *Drawing {
	f := r.figure()
	if f == nil {
		return nil
	}
	return &Drawing{*f}
}
