package slowclient

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// memorySeries is one route and server of the memory figure: each run's
// app memory peak against its number of slow readers, split by whether
// the kernel killed an app process for memory during the run.
type memorySeries struct {
	name     string
	ok, oom  plotter.XYs
	counts   map[int]bool // slow-reader counts with a point
	excluded int          // failed or aborted runs, other than OOM kills
}

// collectMemory gathers every run with an app memory peak, by route and
// server, in the order the runs came. An OOM-killed run is kept: its peak
// is the limit it hit, and the kill is the result. Other failed runs are
// left out and counted.
func collectMemory(runs []recorder.Run) []*memorySeries {
	var order []*memorySeries
	byName := map[string]*memorySeries{}
	for _, r := range runs {
		name := r.Route + ", " + r.Server
		s := byName[name]
		if s == nil {
			s = &memorySeries{name: name, counts: map[int]bool{}}
			byName[name] = s
			order = append(order, s)
		}
		peak := recorder.MemoryPeakMiB(r.Components[0])
		oom := r.Components[0].OOMKills.Valid && r.Components[0].OOMKills.Value > 0
		switch {
		case !peak.Valid || r.SlowClients < 1:
		case oom:
			s.oom = append(s.oom, plotter.XY{X: float64(r.SlowClients), Y: peak.Value})
			s.counts[r.SlowClients] = true
		case r.Status == recorder.RunOK:
			s.ok = append(s.ok, plotter.XY{X: float64(r.SlowClients), Y: peak.Value})
			s.counts[r.SlowClients] = true
		default:
			s.excluded++
		}
	}
	return order
}

// memoryFigure is the app's memory peak against the number of slow
// readers, one colour per route and server: what the app pays to hold
// slow responses (an async server without backpressure buffers them
// whole), with the runs the kernel ended by an OOM kill marked. It needs
// a route and server run with at least two reader counts.
func memoryFigure(runs []recorder.Run) (*report.Drawing, string) {
	all := collectMemory(runs)
	series := slices.DeleteFunc(slices.Clone(all), func(s *memorySeries) bool { return len(s.counts) < 2 })
	if len(series) == 0 {
		return nil, "no route and server has app memory peaks at two or more slow-reader counts"
	}
	f := report.NewDrawing("app-memory", "App memory peak against slow readers", 8*vg.Inch, 4.5*vg.Inch)
	p := report.NewPlot(f.Title(), "slow readers (log scale)", "app memory peak (MiB, log scale)")
	report.Grid(p, true, true)
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	oomRuns, excluded := 0, 0
	for i, s := range series {
		c := report.ColorAt(i)
		pts := append(slices.Clone(s.ok), s.oom...)
		for _, pt := range pts {
			xlo, xhi, ylo, yhi = math.Min(xlo, pt.X), math.Max(xhi, pt.X), math.Min(ylo, pt.Y), math.Max(yhi, pt.Y)
		}
		if line := medianLine(s.ok); len(line) > 1 {
			l, err := plotter.NewLine(line)
			if err != nil {
				return nil, err.Error()
			}
			l.LineStyle.Color = c
			p.Add(l)
		}
		if len(s.ok) > 0 {
			sc := report.Scatter(s.ok, c, vg.Points(3.5))
			p.Add(sc)
			p.Legend.Add(s.name, sc)
		}
		if len(s.oom) > 0 {
			m := report.Marks(s.oom, c, draw.CrossGlyph{})
			m.GlyphStyle.Radius = vg.Points(5)
			p.Add(m)
			p.Legend.Add(s.name+", OOM-killed", m)
		}
		f.AddSeries(s.name, len(pts))
		oomRuns += len(s.oom)
		excluded += s.excluded
	}
	report.SetLog(&p.X, xlo, xhi)
	report.SetLog(&p.Y, ylo, yhi)
	f.AddPanel(p)
	parts := []string{"Point = one run's app memory peak (its cgroup's, page cache included; " +
		"the processes' RSS where the app has no cgroup); line = median per slow-reader count over the ok runs. " +
		"A cross is a run in which the kernel killed an app process for reaching the cgroup memory limit " +
		"(runs.csv app_oom_kills): its peak is the limit, not what the app would have used."}
	if oomRuns > 0 {
		parts = append(parts, fmt.Sprintf("%d runs OOM-killed.", oomRuns))
	}
	if excluded > 0 {
		parts = append(parts, fmt.Sprintf("%d runs failed or aborted for other reasons are left out (reasons in runs.csv).", excluded))
	}
	if single := len(all) - len(series); single > 0 {
		parts = append(parts, fmt.Sprintf("%d route and server combinations with fewer than two slow-reader counts are not drawn.", single))
	}
	f.SetCaption(strings.Join(parts, " "))
	return f, ""
}

// medianLine joins the median of each slow-reader count's points.
func medianLine(pts plotter.XYs) plotter.XYs {
	by := map[float64][]float64{}
	for _, pt := range pts {
		by[pt.X] = append(by[pt.X], pt.Y)
	}
	var line plotter.XYs
	for x, ys := range by {
		line = append(line, plotter.XY{X: x, Y: recorder.NearestRank(ys, 50)})
	}
	slices.SortFunc(line, func(a, b plotter.XY) int { return int(math.Copysign(1, a.X-b.X)) })
	return line
}
