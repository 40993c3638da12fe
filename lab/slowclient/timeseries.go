package slowclient

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// timeSeriesFig is the time-series figure of one route and server, or why
// there is none.
type timeSeriesFig struct {
	key condKey
	fig *report.Drawing
	why string
}

// timeSeries returns, for each route and server, the time series of the
// median-p95 run of its condition with the most slow clients (the 2-slow
// condition of the presets): the run whose queueing matters most, shown as
// a typical rather than the best or worst repetition.
func timeSeries(keys []condKey, groups map[condKey][]recorder.Run, d *results) []timeSeriesFig {
	type rs struct{ route, server string }
	var order []rs
	most := map[rs]condKey{}
	for _, k := range keys {
		g := rs{k.route, k.server}
		cur, seen := most[g]
		if !seen {
			order = append(order, g)
		}
		if !seen || k.slow > cur.slow {
			most[g] = k
		}
	}
	var out []timeSeriesFig
	for _, g := range order {
		k := most[g]
		run, nRuns, ok := medianRun(groups[k])
		if !ok {
			out = append(out, timeSeriesFig{key: k, why: "no ok run of the condition has a p95"})
			continue
		}
		f, why := timeSeriesFigure(k, run, nRuns, d)
		out = append(out, timeSeriesFig{key: k, fig: f, why: why})
	}
	return out
}

// medianRun returns the run whose p95 is the median of the runs' p95: the
// lower middle for an even count, ties broken by repetition, so it is
// always a run that exists. n is the number of runs with a p95.
func medianRun(runs []recorder.Run) (run recorder.Run, n int, ok bool) {
	var with []recorder.Run
	for _, r := range runs {
		if r.P95MS.Valid {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return recorder.Run{}, 0, false
	}
	slices.SortStableFunc(with, func(a, b recorder.Run) int {
		return cmp.Or(cmp.Compare(a.P95MS.Value, b.P95MS.Value), cmp.Compare(a.Rep, b.Rep))
	})
	return with[(len(with)-1)/2], len(with), true
}

// panel is one plot of a time-series figure with its series.
type panel struct {
	p       *plot.Plot
	series  []seriesCount
	missing []string // series of the panel without data, left out
	xMax    float64
}

// seriesCount is one series of a panel and its points.
type seriesCount struct {
	name   string
	points int
}

// runData returns the run's /fast requests and its resource samples by
// component, in time order.
func runData(runID string, d *results) ([]recorder.Request, map[string][]recorder.ResourceSample) {
	reqs := slices.DeleteFunc(slices.Clone(d.requests), func(r recorder.Request) bool { return r.RunID != runID })
	samples := map[string][]recorder.ResourceSample{}
	for _, s := range d.samples {
		if s.RunID == runID {
			samples[s.Component] = append(samples[s.Component], s)
		}
	}
	for _, ss := range samples {
		slices.SortStableFunc(ss, func(a, b recorder.ResourceSample) int {
			switch {
			case a.TS < b.TS:
				return -1
			case a.TS > b.TS:
				return 1
			}
			return 0 // equal, or NaN
		})
	}
	return reqs, samples
}

// runPanels is the panels of a run's time-series figure: those drawn,
// with what each shows for the caption, and those left out with the
// reason.
type runPanels struct {
	panels  []panel
	texts   []string // what each drawn panel shows
	skipped []string // "name (why)"
}

// add adds p, the panel named what, which text describes, or what left
// out for why when p is nil.
func (rp *runPanels) add(what, text string, p *panel, why string) {
	if p == nil {
		rp.skipped = append(rp.skipped, what+" ("+why+")")
		return
	}
	if len(p.missing) > 0 {
		text += " (no samples, not drawn: " + strings.Join(p.missing, ", ") + ")"
	}
	rp.panels = append(rp.panels, *p)
	rp.texts = append(rp.texts, text)
}

// timeSeriesFigure draws run, the median run of condition k's nRuns, over
// time: a panel each for its /fast latency, the proxy's temp files, the
// app's memory and the components' CPU use, as far as there is data. It
// returns nil and the reason when there is none.
func timeSeriesFigure(k condKey, run recorder.Run, nRuns int, d *results) (*report.Drawing, string) {
	reqs, samples := runData(run.RunID, d)
	rp := &runPanels{}
	lat, failed, why := latencyPanel(reqs, d.requests != nil)
	text := "/fast latency = each ok request's actual start to last body byte, at its start time (log scale)"
	if failed > 0 {
		text += fmt.Sprintf("; %d failed requests (no response or an error) are not drawn", failed)
	}
	rp.add("/fast latency", text, lat, why)
	for _, sp := range []struct {
		what, text string
		draw       func() (*panel, string)
	}{
		{"proxy temp files", "proxy temp files = total logical size of the proxy's open temp files, unlinked ones included, in MiB",
			func() (*panel, string) { return tempPanel(samples["proxy"], k.route) }},
		{"app memory", "app memory = the app cgroup's current memory usage and the RSS summed over its processes, in MiB",
			func() (*panel, string) { return memoryPanel(samples["app"]) }},
		{"CPU", "CPU = change in a component's CPU time (cpu_seconds) between consecutive samples divided by the time " +
			"between them, in cores", func() (*panel, string) { return cpuPanel(samples) }},
	} {
		p, why := (*panel)(nil), "resource-samples.csv is not present"
		if d.samples != nil {
			p, why = sp.draw()
		}
		rp.add(sp.what, sp.text, p, why)
	}
	if len(rp.panels) == 0 {
		return nil, "run " + run.RunID + " has no data to draw: " + strings.Join(rp.skipped, "; ")
	}

	f := report.NewDrawing("timeseries-"+report.Slug(fmt.Sprintf("%s-%s-s%d", k.route, k.server, k.slow)),
		fmt.Sprintf("%s, %s, %d slow clients: run %s over time", k.route, k.server, k.slow, run.RunID),
		8*vg.Inch, vg.Length(0.6+2.3*float64(len(rp.panels)))*vg.Inch)
	xMax := 0.0
	for _, p := range rp.panels {
		xMax = math.Max(xMax, p.xMax)
	}
	for _, p := range rp.panels {
		p.p.X.Min, p.p.X.Max = 0, math.Max(xMax, 1)
		f.AddPanel(p.p)
		for _, s := range p.series {
			f.AddSeries(s.name, s.points)
		}
	}
	shows := strings.Join(rp.texts, "; ")
	caption := fmt.Sprintf("Run %s is the condition's median run: its p95 (%.1f ms) is the median of the "+
		"p95 of the condition's %d ok runs (the lower middle for an even count). Time is seconds since the run "+
		"start; %s. %s.",
		run.RunID, run.P95MS.Value, nRuns, samplingText(samples), strings.ToUpper(shows[:1])+shows[1:])
	if len(rp.skipped) > 0 {
		caption += " Left out for lack of data: " + strings.Join(rp.skipped, "; ") + "."
	}
	f.SetCaption(caption)
	return f, ""
}

func latencyPanel(reqs []recorder.Request, present bool) (p *panel, failed int, why string) {
	if !present {
		return nil, 0, "requests.csv is not present"
	}
	var xys plotter.XYs
	for _, r := range reqs {
		ok := r.Status >= 200 && r.Status <= 399 && r.Error == ""
		if !ok || !(r.LatencyMS > 0) || math.IsNaN(r.StartS) {
			if !ok {
				failed++
			}
			continue
		}
		xys = append(xys, plotter.XY{X: r.StartS, Y: r.LatencyMS})
	}
	if len(xys) == 0 {
		return nil, failed, fmt.Sprintf("no ok /fast request of the run in requests.csv, %d failed", failed)
	}
	pl := report.NewPlot("/fast latency", "time since run start (s)", "latency (ms, log scale)")
	report.Grid(pl, true, true)
	s := report.Scatter(xys, report.ColorAt(0), vg.Points(2.5))
	pl.Add(s)
	lo, hi := math.Inf(1), math.Inf(-1)
	xMax := 0.0
	for _, p := range s.XYs {
		lo, hi, xMax = math.Min(lo, p.Y), math.Max(hi, p.Y), math.Max(xMax, p.X)
	}
	report.SetLog(&pl.Y, lo, hi)
	return &panel{p: pl, series: []seriesCount{{"/fast latency", len(s.XYs)}}, xMax: xMax}, failed, ""
}

// series collects one Maybe column of samples as (t, scale*value) points.
func seriesOf(ss []recorder.ResourceSample, get func(recorder.ResourceSample) recorder.Maybe, scale float64) plotter.XYs {
	var xys plotter.XYs
	for _, s := range ss {
		if v := get(s); v.Valid && !math.IsNaN(s.TS) {
			xys = append(xys, plotter.XY{X: s.TS, Y: v.Value * scale})
		}
	}
	return xys
}

const mibScale = 1.0 / (1 << 20) // bytes to MiB

// linePanel draws named series as lines from a zero baseline; it returns
// nil when no series has a point.
func linePanel(title, yLabel string, names []string, series []plotter.XYs) *panel {
	pl := report.NewPlot(title, "time since run start (s)", yLabel)
	report.Grid(pl, true, true)
	p := &panel{p: pl}
	hi := 0.0
	for i, xys := range series {
		if len(xys) == 0 {
			p.missing = append(p.missing, names[i])
			continue
		}
		l := report.Line(xys, report.ColorAt(i))
		pl.Add(l)
		if len(series) > 1 {
			pl.Legend.Add(names[i], l)
		}
		p.series = append(p.series, seriesCount{names[i], len(l.XYs)})
		for _, q := range l.XYs {
			p.xMax, hi = math.Max(p.xMax, q.X), math.Max(hi, q.Y)
		}
	}
	if len(p.series) == 0 {
		return nil
	}
	pl.Legend.Left = true
	// Headroom above the data for the legend's lines.
	pl.Y.Min, pl.Y.Max = 0, hi*(1.1+0.15*float64(len(p.series)))
	if hi <= 0 {
		pl.Y.Max = 1 // all zero: still a readable axis
	}
	return p
}

func tempPanel(ss []recorder.ResourceSample, route string) (*panel, string) {
	xys := seriesOf(ss, func(s recorder.ResourceSample) recorder.Maybe { return s.TempLogicalBytes }, mibScale)
	if p := linePanel("proxy temp files, logical size", "MiB", []string{"temp logical"}, []plotter.XYs{xys}); p != nil {
		return p, ""
	}
	why := "no temp_logical_bytes samples for component proxy"
	if route == "direct" {
		why += "; the direct route has no proxy"
	}
	return nil, why
}

func memoryPanel(ss []recorder.ResourceSample) (*panel, string) {
	mem := seriesOf(ss, func(s recorder.ResourceSample) recorder.Maybe { return s.MemoryBytes }, mibScale)
	rss := seriesOf(ss, func(s recorder.ResourceSample) recorder.Maybe { return s.RSSBytes }, mibScale)
	if p := linePanel("app memory", "MiB", []string{"cgroup memory", "RSS"}, []plotter.XYs{mem, rss}); p != nil {
		return p, ""
	}
	return nil, "no memory_bytes or rss_bytes samples for component app"
}

// cpuPanel draws each component's CPU use in cores: the derivative of its
// cumulative cpu_seconds. A decrease (a counter reset, such as a restarted
// cgroup) is a gap, not negative use.
func cpuPanel(byComp map[string][]recorder.ResourceSample) (*panel, string) {
	comps := slices.Clone(recorder.Components[:])
	for c := range byComp {
		if !slices.Contains(comps, c) {
			comps = append(comps, c)
		}
	}
	slices.Sort(comps[len(recorder.Components):])
	var names []string
	var series []plotter.XYs
	for _, c := range comps {
		var xys plotter.XYs
		var prevT, prevV float64
		have := false
		for _, s := range byComp[c] {
			if !s.CPUSeconds.Valid || math.IsNaN(s.TS) {
				continue
			}
			if have && s.TS > prevT && s.CPUSeconds.Value >= prevV {
				xys = append(xys, plotter.XY{X: s.TS, Y: (s.CPUSeconds.Value - prevV) / (s.TS - prevT)})
			}
			prevT, prevV, have = s.TS, s.CPUSeconds.Value, true
		}
		names, series = append(names, c), append(series, xys)
	}
	if p := linePanel("CPU use", "cores", names, series); p != nil {
		return p, ""
	}
	return nil, "fewer than two cpu_seconds samples for every component"
}

// samplingText says how often the run's resources were sampled: the
// median interval between consecutive samples of a component.
func samplingText(samples map[string][]recorder.ResourceSample) string {
	var gaps []float64
	for _, ss := range samples {
		for i := 1; i < len(ss); i++ {
			gaps = append(gaps, ss[i].TS-ss[i-1].TS)
		}
	}
	if len(gaps) == 0 {
		return "resources were not sampled"
	}
	return fmt.Sprintf("resources are sampled every %.0f ms (median interval)", 1000*recorder.Median(gaps))
}
