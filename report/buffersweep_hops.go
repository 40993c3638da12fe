package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// The cell whose hops are drawn for each route, when the sweep has it:
// the published experiment's download.
const hopCellSize, hopCellRate = 16 << 20, 2 << 20

// pickHopCell returns the cell of one route (and kernel) whose hop bytes
// are drawn: 16 MiB at 2 MiB/s if the sweep has it (preferred), else the
// largest size at the median of the route's rates (the lower middle for
// an even count, so it is a rate the route has); ok is false without
// cells.
func pickHopCell(cells []recorder.SweepCell) (c recorder.SweepCell, preferred, ok bool) {
	var rates []int64
	for _, c := range cells {
		if c.SizeBytes == hopCellSize && c.RateBps == hopCellRate {
			return c, true, true
		}
		if !slices.Contains(rates, c.RateBps) {
			rates = append(rates, c.RateBps)
		}
	}
	if len(rates) == 0 {
		return recorder.SweepCell{}, false, false
	}
	slices.Sort(rates)
	median := rates[(len(rates)-1)/2]
	for _, cand := range cells {
		if cand.RateBps == median && (!ok || cand.SizeBytes > c.SizeBytes) {
			c, ok = cand, true
		}
	}
	return c, false, ok
}

// cellData is what the hop figure reads of a cell's results directory;
// a nil slice means the file is not there.
type cellData struct {
	hops []recorder.Hop
	runs []recorder.Run
}

func loadCellData(dir string) (*cellData, error) {
	d := &cellData{}
	var err error
	if d.hops, _, err = readOptional[recorder.Hop](dir); err != nil {
		return nil, err
	}
	if d.runs, _, err = readOptional[recorder.Run](dir); err != nil {
		return nil, err
	}
	return d, nil
}

// chooseRun returns the run of condition k whose download 0 is drawn:
// the first in hops.csv among k's ok runs, else among all of k's runs
// (status says which). why says why there is none.
func chooseRun(d *cellData, k condKey) (runID, status, why string) {
	if d.hops == nil {
		return "", "", "hops.csv is not present"
	}
	if d.runs == nil {
		return "", "", "runs.csv is not present, so which of hops.csv's runs are the route's is not known"
	}
	statusOf := map[string]string{}
	for _, r := range d.runs {
		if keyOf(r) == k {
			statusOf[r.RunID] = r.Status
		}
	}
	for _, okOnly := range []bool{true, false} {
		for _, h := range d.hops {
			st, mine := statusOf[h.RunID]
			if mine && h.Download == 0 && (!okOnly || st == recorder.RunOK) {
				return h.RunID, st, ""
			}
		}
	}
	return "", "", "hops.csv has no sample of download 0 of a run of the route"
}

// hopStack is one download's hop samples, ready to stack.
type hopStack struct {
	ts      []float64  // sample times, ascending
	layers  []hopLayer // bottom to top: client_read, then the hops in transit from the client back to the app
	written plotter.XYs
	sources map[string]map[string]bool // sources seen per hop
	missing map[string]int             // samples in which a stacked hop's source was missing
}

// hopLayer is one stacked hop's bytes at each sample, in MiB.
type hopLayer struct {
	hop string
	mib []float64
}

// deliveredPart names the hop that is a part of a send queue's bytes the
// receiver already has: subtracted from the send queue, since the
// receiver's hop counts them too.
var deliveredPart = map[string]string{
	recorder.HopAppSendQueue:         recorder.HopAppSendQueueDelivered,
	recorder.HopProxyClientSendQueue: recorder.HopProxyClientSendQueueDelivered,
}

// stackOrder is the hops stacked, bottom to top: what the client has
// read, then the hops in transit from the client back to the app, so the
// top of the stack is what the app has written.
func stackOrder() []string {
	order := []string{recorder.HopClientRead}
	for i := len(recorder.HopsInTransit) - 1; i >= 0; i-- {
		order = append(order, recorder.HopsInTransit[i])
	}
	return order
}

// stackHops arranges one download's rows (one run, one download) by
// sample. A hop without a row in a sample is 0 there; a stacked hop that
// has no row in any sample (the direct route's proxy hops) is left out.
func stackHops(rows []recorder.Hop) hopStack {
	st := hopStack{sources: map[string]map[string]bool{}, missing: map[string]int{}}
	samples := map[float64]map[string]int64{}
	for _, r := range rows {
		if samples[r.TS] == nil {
			samples[r.TS] = map[string]int64{}
			st.ts = append(st.ts, r.TS)
		}
		samples[r.TS][r.Hop] = r.Bytes
		if st.sources[r.Hop] == nil {
			st.sources[r.Hop] = map[string]bool{}
		}
		st.sources[r.Hop][r.Source] = true
		if r.Source == recorder.HopSourceMissing {
			st.missing[r.Hop]++
		}
		if r.Hop == recorder.HopAppWritten && r.Source != recorder.HopSourceMissing {
			st.written = append(st.written, plotter.XY{X: r.TS, Y: float64(r.Bytes) * mibScale})
		}
	}
	slices.Sort(st.ts)
	slices.SortStableFunc(st.written, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
	for _, hop := range stackOrder() {
		if st.sources[hop] == nil {
			continue
		}
		l := hopLayer{hop: hop, mib: make([]float64, len(st.ts))}
		for i, t := range st.ts {
			b := samples[t][hop]
			if part, ok := deliveredPart[hop]; ok {
				b = max(b-samples[t][part], 0)
			}
			l.mib[i] = float64(b) * mibScale
		}
		st.layers = append(st.layers, l)
	}
	return st
}

// hopColours keeps each hop's colour the same in every panel.
var hopColours = map[string]color.Color{
	recorder.HopClientRead:           color.Gray{0xc8},
	recorder.HopClientRecvQueue:      palette[0],
	recorder.HopProxyClientSendQueue: palette[2],
	recorder.HopProxyTempFile:        palette[4],
	recorder.HopProxyMemory:          palette[3],
	recorder.HopProxyUpstreamRecvQ:   palette[5],
	recorder.HopAppSendQueue:         palette[1],
}

// hopPanel draws st as stacked areas with app_written as a line over
// them. zero lists the hops at 0 throughout, not drawn; top is the
// highest point drawn.
func hopPanel(title string, st hopStack) (p *plot.Plot, series []seriesInfo, zero []string, top float64) {
	p = NewPlot(title, "time since run start (s)", "bytes of download 0 (MiB)")
	Grid(p, true, true)
	lower := make([]float64, len(st.ts))
	type entry struct {
		name  string
		thumb plot.Thumbnailer
	}
	var entries []entry
	for _, l := range st.layers {
		if slices.Max(l.mib) <= 0 {
			zero = append(zero, l.hop)
			continue
		}
		ring := make(plotter.XYs, 0, 2*len(st.ts))
		upper := make([]float64, len(st.ts))
		for i, t := range st.ts {
			upper[i] = lower[i] + l.mib[i]
			ring = append(ring, plotter.XY{X: t, Y: upper[i]})
			top = math.Max(top, upper[i])
		}
		for i := len(st.ts) - 1; i >= 0; i-- {
			ring = append(ring, plotter.XY{X: st.ts[i], Y: lower[i]})
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			panic("report: " + err.Error()) // finite points cannot fail
		}
		poly.Color = hopColours[l.hop]
		poly.LineStyle = draw.LineStyle{Color: hopColours[l.hop], Width: vg.Points(0.5)}
		p.Add(poly)
		entries = append(entries, entry{l.hop, poly})
		series = append(series, seriesInfo{l.hop, len(st.ts)})
		lower = upper
	}
	if len(st.written) > 0 {
		w := line(st.written, ColorAt(6))
		p.Add(w)
		p.Legend.Add(recorder.HopAppWritten+" (line)", w)
		series = append(series, seriesInfo{recorder.HopAppWritten, len(w.XYs)})
		for _, q := range w.XYs {
			top = math.Max(top, q.Y)
		}
	}
	for i := len(entries) - 1; i >= 0; i-- { // top of the stack first
		p.Legend.Add(entries[i].name, entries[i].thumb)
	}
	p.Legend.Top, p.Legend.Left = true, false
	return p, series, zero, top
}

// hopsFigure draws, for each condition of the first kernel, where one
// download's bytes were over time: one panel per route. skipped says
// which routes were left out and why; err is a results file that does not
// parse.
func hopsFigure(sw *sweep) (f *figure, skipped []string, err error) {
	if len(sw.kernels) == 0 {
		return nil, nil, nil
	}
	kernel := sw.kernels[0]
	f = &figure{name: "buffer-sweep-hops", title: "Where one download's bytes are over time, one run per route",
		width: 8 * vg.Inch}
	cache := map[string]*cellData{}
	var notes hopNotes
	xMax, yMax := 0.0, 0.0
	keys := sw.keysOf(kernel)
	for _, k := range keys {
		c, preferred, ok := pickHopCell(sw.of(kernel, k))
		if !ok {
			continue
		}
		where := fmt.Sprintf("%s at %s", SizeText(c.SizeBytes), rateText(c.RateBps))
		if c.Dir == "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s) left out: %s names no directory for it", k.label(), where, sweepFile))
			continue
		}
		dir := sw.cellDir(c)
		d := cache[dir]
		if d == nil {
			if d, err = loadCellData(dir); err != nil {
				return nil, nil, err
			}
			cache[dir] = d
		}
		runID, status, why := chooseRun(d, k)
		if runID == "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s, directory %s) left out: %s", k.label(), where, c.Dir, why))
			continue
		}
		var rows []recorder.Hop
		for _, h := range d.hops {
			if h.RunID == runID && h.Download == 0 {
				rows = append(rows, h)
			}
		}
		st := stackHops(rows)
		if len(st.ts) < 2 || len(st.layers) == 0 {
			skipped = append(skipped, fmt.Sprintf("%s (%s, directory %s) left out: run %s has %d samples of download 0 "+
				"with bytes in transit, fewer than the 2 a time series needs", k.label(), where, c.Dir, runID, len(st.ts)))
			continue
		}
		p, series, zero, top := hopPanel(fmt.Sprintf("%s: %s", k.label(), where), st)
		if len(series) == 0 {
			skipped = append(skipped, fmt.Sprintf("%s (%s, directory %s) left out: run %s has no bytes of download 0 in any hop",
				k.label(), where, c.Dir, runID))
			continue
		}
		f.panels = append(f.panels, p)
		f.series = append(f.series, series...)
		xMax, yMax = math.Max(xMax, st.ts[len(st.ts)-1]), math.Max(yMax, top)

		notes.add(k, where, kernel, c, preferred, runID, status, st, zero)
	}
	if len(f.panels) == 0 {
		if len(keys) > 0 && len(skipped) == 0 {
			skipped = append(skipped, "no route has a cell to draw")
		}
		return nil, skipped, nil
	}
	if len(f.panels) == 1 { // drawn alone: its title is the figure's too
		f.panels[0].Title.Text = f.title + "\n" + f.panels[0].Title.Text
	}
	for _, p := range f.panels {
		p.X.Min, p.X.Max = 0, math.Max(xMax, 0.1)*1.5 // room on the right for the legend
		p.Y.Min, p.Y.Max = 0, math.Max(yMax, 0.1)*1.06
	}
	f.height = vg.Length(0.6+2.7*float64(len(f.panels))) * vg.Inch
	f.caption = notes.caption()
	return f, skipped, nil
}

// sampleInterval says how often the samples were taken: the median
// interval between consecutive ones.
func sampleInterval(ts []float64) string {
	var gaps []float64
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i]-ts[i-1])
	}
	if len(gaps) == 0 {
		return ""
	}
	return fmt.Sprintf("every %.0f ms (median interval)", 1000*recorder.Median(gaps))
}
