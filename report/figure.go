package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// dpi is the resolution of the PNG files: sharp on a high-density screen
// at the size report.html shows them, still small files.
const dpi = 120

// figure is a figure before it is written: one or more panels stacked
// vertically, plus what the report says about it.
type figure struct {
	name, title, caption string
	panels               []*plot.Plot
	width, height        vg.Length
	series               []seriesInfo
}

// seriesInfo is one data series of a figure.
type seriesInfo struct {
	name   string
	points int
}

// addSeries records a series drawn with n points or bars.
func (f *figure) addSeries(name string, n int) { f.series = append(f.series, seriesInfo{name, n}) }

// write renders the figure to dir/figures/NAME.png and NAME.svg.
func (f *figure) write(dir string) (Figure, error) {
	fig := Figure{Name: f.name, Title: f.title, Caption: f.caption, Series: len(f.series), Panels: len(f.panels)}
	for _, s := range f.series {
		fig.Points = append(fig.Points, s.points)
	}
	for _, p := range f.panels {
		fig.Axes = append(fig.Axes, Axes{Title: p.Title.Text, X: p.X.Label.Text, Y: p.Y.Label.Text})
	}
	for _, ext := range []string{"png", "svg"} {
		var c vg.CanvasWriterTo
		if ext == "png" {
			c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.width, f.height), vgimg.UseDPI(dpi))}
		} else {
			c = vgsvg.New(f.width, f.height)
		}
		if err := f.draw(c); err != nil {
			return fig, err
		}
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return fig, fmt.Errorf("figure %s: encode %s: %w", f.name, ext, err)
		}
		b := buf.Bytes()
		if ext == "svg" {
			b = svgFontFallback(b)
		}
		rel := path.Join(FiguresDir, f.name+"."+ext)
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), b, 0o644); err != nil {
			return fig, fmt.Errorf("figure %s: %w", f.name, err)
		}
		fig.Files = append(fig.Files, rel)
	}
	return fig, nil
}

// draw draws the panels onto c, stacked with aligned data areas. gonum
// panics on data it cannot draw (such as a value <= 0 on a log axis); that
// becomes an error naming the figure rather than a crash.
func (f *figure) draw(c vg.CanvasSizer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("figure %s: draw: %v", f.name, r)
		}
	}()
	dc := draw.New(c)
	if len(f.panels) == 1 {
		f.panels[0].Draw(dc)
		return nil
	}
	// The figure's own title above the panels, so the file alone says
	// what it shows.
	sty := f.panels[0].Title.TextStyle
	sty.Font = font.From(sans, 13)
	sty.YAlign = draw.YTop
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(6)}, f.title)
	tiles := draw.Tiles{Rows: len(f.panels), Cols: 1, PadY: vg.Points(14),
		PadTop: vg.Points(30), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	plots := make([][]*plot.Plot, len(f.panels))
	for i, p := range f.panels {
		plots[i] = []*plot.Plot{p}
	}
	for i, row := range plot.Align(plots, tiles, dc) {
		f.panels[i].Draw(row[0])
	}
	return nil
}

// svgFontFallback gives the SVG's text a fallback: gonum names only the
// Liberation font it measured with, which many viewers lack. Embedding the
// font would add hundreds of KiB to every file.
func svgFontFallback(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
}

// sans is the font of all figure text.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Font is the font of figure text at size, for text a figure drawn
// elsewhere (Drawing) adds to its panels, such as labels beside points.
func Font(size vg.Length) font.Font { return font.From(sans, size) }

// NewPlot returns a plot with a title, axis labels and sans-serif text.
func NewPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Marker = linearTicks{}
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(14)
	return p
}

// Grid adds light grid lines behind the data.
func Grid(p *plot.Plot, vertical, horizontal bool) {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{0xdd}
	g.Horizontal.Color = color.Gray{0xdd}
	if !vertical {
		g.Vertical.Color = nil
	}
	if !horizontal {
		g.Horizontal.Color = nil
	}
	p.Add(g)
}

// SetLog makes axis a logarithmic with room around [lo, hi], which must
// be positive.
func SetLog(a *plot.Axis, lo, hi float64) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = logTicks{}
	a.Min, a.Max = lo/1.6, hi*1.6
}

// logTicks labels 1, 2 and 5 times powers of ten when the axis spans up to
// three decades, else only the powers of ten; the other integer multiples
// get unlabelled ticks. plot.LogTicks labels only powers of ten, which
// leaves a range such as 1.2 to 4 ms without a single label.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0 && hi > lo) {
		return nil
	}
	dense := math.Log10(hi/lo) <= 3
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || dense && (m == 2 || m == 5) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
				if v >= 1e4 {
					t.Label = strconv.FormatFloat(v, 'f', 0, 64)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// linearTicks puts about five labelled ticks at 1, 2 or 5 times a power
// of ten, labelled without trailing zeros (plot.DefaultTicks writes 25.00).
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		label := strconv.FormatFloat(v, 'f', decimals, 64)
		if strings.Contains(label, ".") {
			label = strings.TrimRight(strings.TrimRight(label, "0"), ".")
		}
		if label == "-0" {
			label = "0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
		// An unlabelled tick halfway to the next one.
		if mid := v + step/2; mid <= hi {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	return ticks
}

// palette is Okabe-Ito: distinguishable with the common colour-vision
// deficiencies.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xff}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xff}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xff}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	color.RGBA{0x33, 0x33, 0x33, 0xff}, // near black
}

// ColorAt is the i-th colour of the palette every figure uses.
func ColorAt(i int) color.Color { return palette[i%len(palette)] }

// lighter mixes c with white: the fill of bars whose points are drawn in c.
func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8)*45/100 + 255*55/100) }
	return color.RGBA{mix(r), mix(g), mix(b), 0xff}
}
