package loadgendir

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Section is the load generator's section of report.html: a `slowlab
// loadgen --out` directory's, or a merged one's (`slowlab merge`), marked
// by loadgen.json. lab lists it after the experiments' (register.go).
var Section = report.NewSection(Name, File, func(dir string) (*report.Part, error) {
	d, err := readResults(dir)
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, d.intro())
	p.SetTitle("slowlab loadgen: " + d.rec.Target)
	if f := d.latencyFigure(); f != nil {
		p.AddDrawing(f)
	} else {
		p.Skip("Latency figure left out: no request of %s started and succeeded.", recorder.FileName[recorder.Request]())
	}
	report.AddTable(p, &summaryTable, d.summaryRows())
	return p, nil
})

// intro says what load the directory holds, from loadgen.json.
func (d *results) intro() string {
	r := d.rec
	s := fmt.Sprintf("Open-loop requests to %s at %g requests/s for %s (%d planned; run %s)", r.Target, r.Rate, r.Duration, r.Planned, r.RunID)
	switch {
	case r.MergedFrom > 0:
		s += fmt.Sprintf(", merged from %d shards (slowlab merge)", r.MergedFrom)
	case r.Shards > 1:
		s += fmt.Sprintf(", shard %d of %d: its every %d-th request", r.Shard, r.Shards, r.Shards)
	}
	if r.Slow > 0 {
		s += fmt.Sprintf(", beside %d slow readers of %s at %s/s", r.Slow, r.SlowTarget, r.ReadRate)
	}
	return s + ". Each request starts on schedule, whatever earlier ones are doing; its latency is from its start to its last body byte."
}

// summaryTable is the run's summary, as `slowlab loadgen` prints it.
var summaryTable = report.Table[row]{
	Caption: "The run's summary, as slowlab loadgen prints it at the end of the run, computed from requests.csv " +
		"(exact nearest-rank percentiles; the command's come from bounded histograms) and large-responses.csv.",
	Cols: []report.Column[row]{
		report.Col("figure", func(r *row) report.Cell { return report.Text(r.Figure) }),
		report.Col("value", func(r *row) report.Cell { return report.Cell{Text: r.Value, Num: r.Num} }),
	},
}

// maxPoints is the most ok requests the figure draws one by one; over
// it, it draws their p50, p95 and maximum per window of time.
const maxPoints = 5000

// windows is how many windows of time the figure of a larger run has.
const windows = 120

// latencyFigure draws every request's latency at its start, failed ones
// apart; nil when no request started and succeeded.
func (d *results) latencyFigure() *report.Drawing {
	if len(d.okMS) == 0 {
		return nil
	}
	f := report.NewDrawing("loadgen-latency", "Request latency over the run", 9*vg.Inch, 4.5*vg.Inch)
	pl := report.NewPlot("latency of each request at its start", "time since the schedule's start (s)", "latency (ms, log scale)")
	report.Grid(pl, true, true)
	lo, hi := slices.Min(d.okMS), slices.Max(d.okMS)
	var caption string
	if len(d.okMS) <= maxPoints {
		s := report.Scatter(points(d.okAt, d.okMS), report.ColorAt(0), vg.Points(2))
		pl.Add(s)
		pl.Legend.Add("ok", s)
		f.AddSeries("ok", len(s.XYs))
		caption = fmt.Sprintf("Each of the %d ok requests at its start", len(d.okMS))
	} else {
		for i, name := range []string{"p50", "p95", "max"} {
			l := report.Line(d.windowed([]float64{50, 95, 100}[i]), report.ColorAt(i))
			pl.Add(l)
			pl.Legend.Add(name, l)
			f.AddSeries(name, len(l.XYs))
		}
		caption = fmt.Sprintf("The %d ok requests' p50, p95 and maximum latency (nearest rank) in each of %d windows of the run, "+
			"at the window's middle", len(d.okMS), windows)
	}
	if len(d.failedMS) > 0 {
		m := report.Marks(points(d.failedAt, d.failedMS), report.ColorAt(3), draw.CrossGlyph{})
		pl.Add(m)
		pl.Legend.Add("failed", m)
		f.AddSeries("failed", len(m.XYs))
		lo, hi = math.Min(lo, slices.Min(d.failedMS)), math.Max(hi, slices.Max(d.failedMS))
		caption += fmt.Sprintf("; the %d failed requests that took time, at their start (x)", len(d.failedMS))
	}
	if rest := d.failed - len(d.failedMS); rest > 0 {
		caption += fmt.Sprintf("; %d failed without a latency (never started, or no time measured) are not drawn", rest)
	}
	if d.notSent > 0 {
		caption += fmt.Sprintf("; %d were never sent (the run ended first)", d.notSent)
	}
	report.SetLog(&pl.Y, lo, hi)
	pl.Legend.Top = true
	f.AddPanel(pl)
	f.SetCaption(caption + ". Latency is from a request's start to its last body byte, in ms on a log axis; " +
		"time is seconds since the schedule's start (--start-at for shards).")
	return f
}

func points(xs, ys []float64) plotter.XYs {
	xys := make(plotter.XYs, len(xs))
	for i := range xs {
		xys[i] = plotter.XY{X: xs[i], Y: ys[i]}
	}
	return xys
}

// windowed is the p-th percentile of the ok requests' latency in each
// window of the run that has one, at the window's middle.
func (d *results) windowed(p float64) plotter.XYs {
	end := slices.Max(d.okAt)
	width := math.Max(end, 1e-3) / windows
	by := make([][]float64, windows)
	for i, at := range d.okAt {
		w := min(int(at/width), windows-1)
		by[max(w, 0)] = append(by[max(w, 0)], d.okMS[i])
	}
	var xys plotter.XYs
	for w, ms := range by {
		if len(ms) > 0 {
			xys = append(xys, plotter.XY{X: (float64(w) + 0.5) * width, Y: recorder.NearestRank(ms, p)})
		}
	}
	return xys
}
