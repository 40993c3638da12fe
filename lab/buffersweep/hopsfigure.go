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

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

const hopsTitle = "Where one download's bytes are over time, one run per route"

// hopsFigure draws, for each condition of the first kernel, where one
// download's bytes were over time: one panel per route. skipped says
// which routes were left out and why; err is a results file that does not
// parse.
func hopsFigure(sw *sweepDir) (d *report.Drawing, skipped []string, err error) {
	if len(sw.kernels) == 0 {
		return nil, nil, nil
	}
	kernel := sw.kernels[0]
	cache := map[string]*cellData{}
	var notes hopNotes
	var panels []*plot.Plot
	var series []hopSeries
	xMax, yMax := 0.0, 0.0
	conds := sw.condsOf(kernel)
	for _, k := range conds {
		r, why, err := hopRouteOf(sw, cache, kernel, k)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			skipped = append(skipped, why)
		}
		if r == nil {
			continue
		}
		p, s, zero, top := hopPanel(fmt.Sprintf("%s: %s", k.label(), r.where), r.st)
		if len(s) == 0 {
			skipped = append(skipped, fmt.Sprintf("%s (%s, directory %s) left out: run %s has no bytes of download 0 in any hop",
				k.label(), r.where, r.cell.Dir, r.runID))
			continue
		}
		panels, series = append(panels, p), append(series, s...)
		xMax, yMax = math.Max(xMax, r.st.ts[len(r.st.ts)-1]), math.Max(yMax, top)
		notes.add(r, kernel, zero)
	}
	if len(panels) == 0 {
		if len(conds) > 0 && len(skipped) == 0 {
			skipped = append(skipped, "no route has a cell to draw")
		}
		return nil, skipped, nil
	}
	d = report.NewDrawing("buffer-sweep-hops", hopsTitle, 8*vg.Inch, vg.Length(0.6+2.7*float64(len(panels)))*vg.Inch)
	if len(panels) == 1 { // drawn alone: its title is the figure's too
		panels[0].Title.Text = hopsTitle + "\n" + panels[0].Title.Text
	}
	for _, p := range panels {
		p.X.Min, p.X.Max = 0, math.Max(xMax, 0.1)*1.5 // room on the right for the legend
		p.Y.Min, p.Y.Max = 0, math.Max(yMax, 0.1)*1.06
		d.AddPanel(p)
	}
	for _, s := range series {
		d.AddSeries(s.name, s.points)
	}
	d.SetCaption(notes.caption())
	return d, skipped, nil
}

// hopRoute is what the hops figure draws of one route: download 0 of one
// run of one of its cells.
type hopRoute struct {
	cond          condition
	cell          Cell
	preferred     bool   // the cell is 16 MiB at 2 MiB/s (pickHopCell)
	where         string // the cell's size and rate
	runID, status string
	st            hopStack
}

// hopRouteOf is the download drawn for condition k of kernel: nil and
// why not when it has none to draw, nil and "" when k has no cell. cache
// keeps the cell directories read.
func hopRouteOf(sw *sweepDir, cache map[string]*cellData, kernel string, k condition) (*hopRoute, string, error) {
	c, preferred, ok := pickHopCell(sw.of(kernel, k))
	if !ok {
		return nil, "", nil
	}
	r := &hopRoute{cond: k, cell: c, preferred: preferred, where: report.SizeText(c.SizeBytes) + " at " + rateText(c.RateBps)}
	if c.Dir == "" {
		return nil, fmt.Sprintf("%s (%s) left out: %s names no directory for it", k.label(), r.where, sweepFile), nil
	}
	dir := sw.cellDir(c)
	d := cache[dir]
	if d == nil {
		d = &cellData{}
		var err error
		if d.hops, _, err = recorder.ReadOptional[recorder.Hop](dir); err == nil {
			d.runs, _, err = recorder.ReadOptional[recorder.Run](dir)
		}
		if err != nil {
			return nil, "", err
		}
		cache[dir] = d
	}
	var why string
	if r.runID, r.status, why = chooseRun(d, k); r.runID == "" {
		return nil, fmt.Sprintf("%s (%s, directory %s) left out: %s", k.label(), r.where, c.Dir, why), nil
	}
	rows := slices.DeleteFunc(slices.Clone(d.hops), func(h recorder.Hop) bool { return h.RunID != r.runID || h.Download != 0 })
	if r.st = stackHops(rows); len(r.st.ts) < 2 || len(r.st.layers) == 0 {
		return nil, fmt.Sprintf("%s (%s, directory %s) left out: run %s has %d samples of download 0 "+
			"with bytes in transit, fewer than the 2 a time series needs", k.label(), r.where, c.Dir, r.runID, len(r.st.ts)), nil
	}
	return r, "", nil
}

// The cell whose hops are drawn for each route, when the sweep has it:
// the published experiment's download.
const hopCellSize, hopCellRate = 16 << 20, 2 << 20

// pickHopCell returns the cell of one route (and kernel) whose hop bytes
// are drawn: 16 MiB at 2 MiB/s if the sweep has it (preferred), else the
// largest size at the median of the route's rates (the lower middle for
// an even count, so it is a rate the route has); ok is false without
// cells.
func pickHopCell(cells []Cell) (c Cell, preferred, ok bool) {
	var rates []int64
	for _, c := range cells {
		if c.SizeBytes == hopCellSize && c.RateBps == hopCellRate {
			return c, true, true
		}
		rates = append(rates, c.RateBps)
	}
	if len(rates) == 0 {
		return Cell{}, false, false
	}
	slices.Sort(rates)
	rates = slices.Compact(rates)
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

// chooseRun returns the run of condition k whose download 0 is drawn:
// the first in hops.csv among k's ok runs, else among all of k's runs
// (status says which). why says why there is none.
func chooseRun(d *cellData, k condition) (runID, status, why string) {
	if d.hops == nil {
		return "", "", "hops.csv is not present"
	}
	if d.runs == nil {
		return "", "", "runs.csv is not present, so which of hops.csv's runs are the route's is not known"
	}
	statusOf := map[string]string{}
	for _, r := range d.runs {
		if (condition{r.Route, r.Server, r.SlowClients}) == k {
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

// hopColours keeps each hop's colour the same in every panel.
var hopColours = map[string]color.Color{
	recorder.HopClientRead:           color.Gray{0xc8},
	recorder.HopClientRecvQueue:      report.ColorAt(0),
	recorder.HopProxyClientSendQueue: report.ColorAt(2),
	recorder.HopProxyTempFile:        report.ColorAt(4),
	recorder.HopProxyMemory:          report.ColorAt(3),
	recorder.HopProxyUpstreamRecvQ:   report.ColorAt(5),
	recorder.HopAppSendQueue:         report.ColorAt(1),
}

// hopSeries is one series of a hop panel: a hop and its points.
type hopSeries struct {
	name   string
	points int
}

// hopPanel draws st as stacked areas with app_written as a line over
// them. zero lists the hops at 0 throughout, not drawn; top is the
// highest point drawn.
func hopPanel(title string, st hopStack) (p *plot.Plot, series []hopSeries, zero []string, top float64) {
	p = report.NewPlot(title, "time since run start (s)", "bytes of download 0 (MiB)")
	report.Grid(p, true, true)
	lower := make([]float64, len(st.ts))
	var polys []*plotter.Polygon // series[i]'s
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
			panic("buffersweep: " + err.Error()) // finite points cannot fail
		}
		poly.Color = hopColours[l.hop]
		poly.LineStyle = draw.LineStyle{Color: hopColours[l.hop], Width: vg.Points(0.5)}
		p.Add(poly)
		polys = append(polys, poly)
		series = append(series, hopSeries{l.hop, len(st.ts)})
		lower = upper
	}
	if len(st.written) > 0 {
		w := report.Line(st.written, report.ColorAt(6))
		p.Add(w)
		p.Legend.Add(recorder.HopAppWritten+" (line)", w)
		series = append(series, hopSeries{recorder.HopAppWritten, len(w.XYs)})
		for _, q := range w.XYs {
			top = math.Max(top, q.Y)
		}
	}
	for i := len(polys) - 1; i >= 0; i-- { // top of the stack first
		p.Legend.Add(series[i].name, polys[i])
	}
	p.Legend.Top, p.Legend.Left = true, false
	return p, series, zero, top
}

// hopNotes is what the hops figure's caption says of its panels: each
// panel's cell and run, the routes whose proxy hops are derived or
// reported by the proxy, the hops at 0 throughout, and the samples with
// a hop's socket missing.
type hopNotes struct {
	texts, derived, reported, zeroTexts, missingTexts []string
}

// add notes the panel of route r on kernel, with the hops at 0
// throughout (zero).
func (h *hopNotes) add(r *hopRoute, kernel string, zero []string) {
	k, st := r.cond, r.st
	t := fmt.Sprintf("%s: the cell %s (kernel %s, directory %s)", k.route, r.where, kernel, r.cell.Dir)
	if !r.preferred {
		t += ", the largest size at the median rate, since the route has no cell of 16 MiB at 2 MiB/s"
	}
	t += fmt.Sprintf(", run %s", r.runID)
	if r.status != recorder.RunOK {
		t += fmt.Sprintf(" (status %s: the route has no ok run with hop samples)", r.status)
	}
	t += fmt.Sprintf(", %d samples ", len(st.ts))
	var gaps []float64 // between consecutive samples
	for i := 1; i < len(st.ts); i++ {
		gaps = append(gaps, st.ts[i]-st.ts[i-1])
	}
	if len(gaps) > 0 {
		t += fmt.Sprintf("every %.0f ms (median interval)", 1000*recorder.Median(gaps))
	}
	h.texts = append(h.texts, t)
	for _, hop := range []string{recorder.HopProxyMemory, recorder.HopProxyTempFile} {
		if st.sources[hop][recorder.HopSourceDerived] && !slices.Contains(h.derived, k.route) {
			h.derived = append(h.derived, k.route)
		}
		if st.sources[hop][recorder.HopSourceProxy] && !slices.Contains(h.reported, k.route) {
			h.reported = append(h.reported, k.route)
		}
	}
	if len(zero) > 0 {
		h.zeroTexts = append(h.zeroTexts, k.route+": "+strings.Join(zero, ", "))
	}
	var miss []string
	for _, l := range st.layers {
		if n := st.missing[l.hop]; n > 0 {
			miss = append(miss, fmt.Sprintf("%s in %d", l.hop, n))
		}
	}
	if len(miss) > 0 {
		h.missingTexts = append(h.missingTexts, k.route+": "+strings.Join(miss, ", "))
	}
}

func (h *hopNotes) caption() string {
	c := "Download 0 of one run per route, " + strings.Join(h.texts, "; ") + ". Stacked from the bottom, in MiB: " +
		"client_read (the bytes the client has read), then where the bytes written but not yet read are, from the " +
		"client back to the app (hops.csv's hops in transit): client_recv_queue, proxy_client_send_queue, proxy_temp_file, " +
		"proxy_memory, proxy_upstream_recv_queue, app_send_queue. A send queue holds its bytes until they are " +
		"acknowledged, and some of them the receiver already has: app_send_queue_delivered and " +
		"proxy_client_send_queue_delivered are taken off app_send_queue and proxy_client_send_queue, so nothing counts " +
		"twice. The line is app_written, the bytes the app has handed to its socket; any gap between it and the " +
		"stack's top is hops.csv's unaccounted. Time is seconds since the run start; panels share their axes."
	if len(h.derived) > 0 {
		c += " proxy_memory and proxy_temp_file of " + strings.Join(h.derived, " and ") + " are derived, not " +
			"measured (source \"derived\": NGINX reports no buffers): what the proxy read from the app minus what it " +
			"sent the client, in memory up to its proxy_buffer_size + proxy_buffers and the rest in its temp file."
	}
	if len(h.reported) > 0 {
		c += " proxy_memory and proxy_temp_file of " + strings.Join(h.reported, " and ") +
			" are the embedded proxy's own report of its buffers."
	}
	if len(h.zeroTexts) > 0 {
		c += " At 0 throughout, not drawn: " + strings.Join(h.zeroTexts, "; ") + "."
	}
	if len(h.missingTexts) > 0 {
		c += " Samples in which a hop's socket was not found (source \"missing\"), counted as 0: " +
			strings.Join(h.missingTexts, "; ") + "."
	}
	return c
}
