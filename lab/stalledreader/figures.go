package stalledreader

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/report"
)

// sectionData is what the section draws: the conditions over their ok
// runs and the downloads of those runs.
type sectionData struct {
	conds     []Summary
	downloads [][]Download // by condition, ok runs only
	left      int          // downloads of runs that were not ok or not in the runs file
}

func newSectionData(runs []RunRow, ds []Download) *sectionData {
	d := &sectionData{conds: Summarize(runs)}
	d.downloads = make([][]Download, len(d.conds))
	byRun := map[string]int{} // ok run id to condition index
	for i, g := range Conditions(runs) {
		for _, r := range g.OK {
			byRun[r.RunID] = i
		}
	}
	for _, dl := range ds {
		if i, ok := byRun[dl.RunID]; ok {
			d.downloads[i] = append(d.downloads[i], dl)
		} else {
			d.left++
		}
	}
	return d
}

// glyphs is the mark of each outcome in the bytes figure; only a
// complete download is a circle (nil).
var glyphs = map[string]draw.GlyphDrawer{
	OutcomeComplete:  nil,
	OutcomeTruncated: draw.BoxGlyph{},
	OutcomeReset:     draw.TriangleGlyph{},
	OutcomeTimeout:   draw.CrossGlyph{},
	OutcomeError:     draw.PlusGlyph{},
}

// bytesFigure draws, per condition, the response's size as a bar and
// each download's received bytes as a mark over it: its shape the
// outcome, its colour the component that ended it. Nil when no ok run has
// a download, or none above 0 bytes of a response above 0 bytes.
func bytesFigure(d *sectionData) *report.Drawing {
	f := &report.ReceivedBytes{Name: "stalled-bytes", Title: "Bytes received per download, against the response size",
		XLabel: "MiB received (bar: the response's size)", Width: 10 * vg.Inch, Taller: vg.Inch, Room: 1.7,
		SizeLine: color.Gray{0x99}, SizeFill: color.Gray{0xea}, // light, behind the downloads' marks
		Left: d.left}
	// A kind per outcome and ender, the outcome's shape in the ender's
	// colour.
	for _, o := range Outcomes {
		for ei, e := range Enders {
			name := o
			if e != EndedByNone {
				name += ", ended by " + e
			}
			f.Kinds = append(f.Kinds, report.DownloadKind{Name: name, Color: report.ColorAt(ei), Shape: glyphs[o]})
		}
	}
	measured := false // a size or download above 0 bytes, of a condition with downloads
	for i, c := range d.conds {
		row := report.DownloadRow{Label: label(&d.conds[i]), Size: c.SizeBytes}
		for _, dl := range d.downloads[i] {
			measured = measured || c.SizeBytes > 0 || dl.Bytes > 0
			kind := indexIn(Outcomes, dl.Outcome)*len(Enders) + indexIn(Enders, dl.EndedBy)
			row.Downloads = append(row.Downloads, report.Received{Bytes: dl.Bytes, Kind: kind})
		}
		f.Rows = append(f.Rows, row)
	}
	if !measured { // nothing but zeros: no figure
		return nil
	}
	f.Caption = fmt.Sprintf("Every download of the ok runs (%s): the body bytes the client received, against the "+
		"response's size (Content-Length). Shape: the outcome as the client saw it (complete; truncated: a 200, then EOF "+
		"before Content-Length; reset; timeout: the client's own bound); colour: the component that ended "+
		"it (app_timeout: a WORKER TIMEOUT line names the worker that served it; send_timeout: the proxy logged "+
		"closing it; client: its bound; unknown: no evidence). Downloads of one condition are spread vertically.", downloadFile)
	return f.Drawing()
}

// timeoutsFigure draws, per condition, the WORKER TIMEOUT lines of its ok
// runs against the downloads they ran; nil when no ok run had its log
// read.
func timeoutsFigure(d *sectionData) *report.Drawing {
	var rows []int
	for i, c := range d.conds {
		if c.WorkerTimeouts.Valid {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := report.NewDrawing("stalled-worker-timeouts", "Workers killed by the app's timeout, against the downloads",
		9*vg.Inch, report.RowsHeight(len(rows)))
	p := report.NewPlot(f.Title(), "count, summed over the ok runs", "condition")
	report.Grid(p, true, false)
	labels := make([]string, len(rows))
	for j, i := range rows {
		labels[j] = label(&d.conds[i])
	}
	ys := report.ConditionRows(p, labels)
	stats := []struct {
		name string
		get  func(i int) float64
	}{
		{"WORKER TIMEOUT lines", func(i int) float64 { return d.conds[i].WorkerTimeouts.Value }},
		{"downloads", func(i int) float64 { return float64(d.conds[i].downloads()) }},
	}
	const thick = 0.36
	hi := 0.0
	for s, st := range stats {
		pos := make([]float64, len(rows))
		val := make([]float64, len(rows))
		for j, i := range rows {
			pos[j] = ys[j] + (0.5-float64(s))*thick // the first series above
			val[j] = st.get(i)
			hi = math.Max(hi, val[j])
		}
		b := report.NewBars(pos, val, thick*0.9, true, report.ColorAt(s))
		p.Add(b)
		p.Legend.Add(st.name, b)
		f.AddSeries(st.name, b.Drawn())
	}
	p.X.Min, p.X.Max = 0, math.Max(1, hi)*1.5
	f.AddPanel(p)
	f.SetCaption("Per condition, over its ok runs (" + runFile + "): the app's WORKER TIMEOUT log lines (Gunicorn's " +
		"master killing a worker that outlived --timeout; the embedded sync model logs the same), summed, and the " +
		"downloads the runs made. One line per download: every stalled client held a worker to the timeout. None: " +
		"the proxy or the client ended the downloads first, or the server has no worker timeout.")
	return f
}
