package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// The stalled-reader results files: the run summaries mark the directory.
var (
	stalledRunsFile      = recorder.FileName[recorder.StalledRun]()
	stalledDownloadsFile = recorder.FileName[recorder.StalledDownload]()
)

// StalledReader is the stalled-reader section, which stalled-reader's registration in lab carries.
var StalledReader = Section{Name: "stalled-reader", Marker: stalledRunsFile, build: buildStalled}

// stalledKey identifies a stalled-reader condition, as
// recorder.SummarizeStalledConditions groups runs.
type stalledKey struct {
	route, server, mode string
	clients             int
	size, rate          int64
	app, send           recorder.Maybe
	stall               float64
}

func stalledRunKey(r recorder.StalledRun) stalledKey {
	return stalledKey{r.Route, r.Server, r.Mode, r.Clients, r.SizeBytes, r.RateBps, r.AppTimeoutS, r.SendTimeoutS, r.StallS}
}

func stalledCondKey(c recorder.StalledCondition) stalledKey {
	return stalledKey{c.Route, c.Server, c.Mode, c.Clients, c.SizeBytes, c.RateBps, c.AppTimeoutS, c.SendTimeoutS, c.StallS}
}

// stalledLabel names a condition in a figure: route, server, how its
// clients read, and the timeouts that apply.
func stalledLabel(c recorder.StalledCondition) string {
	how := fmt.Sprintf("%d stalled %.0f s", c.Clients, c.StallS)
	if c.Mode != recorder.StallMode {
		how = fmt.Sprintf("%d at %.0f KiB/s", c.Clients, float64(c.RateBps)/(1<<10))
	}
	l := fmt.Sprintf("%s, %s, %s", c.Route, c.Server, how)
	if c.AppTimeoutS.Valid {
		l += fmt.Sprintf(", app %.0f s", c.AppTimeoutS.Value)
	}
	if c.SendTimeoutS.Valid {
		l += fmt.Sprintf(", send %.0f s", c.SendTimeoutS.Value)
	}
	return l
}

// stalledData is what the section draws: the conditions over their ok
// runs, each condition's ok runs, and the downloads of those runs.
type stalledData struct {
	conds     []recorder.StalledCondition
	okRuns    [][]recorder.StalledRun      // by condition
	downloads [][]recorder.StalledDownload // by condition, ok runs only
	left      int                          // downloads of runs that were not ok or not in the runs file
	byRun     map[string]int               // ok run id to condition index
}

func newStalledData(runs []recorder.StalledRun) *stalledData {
	d := &stalledData{conds: recorder.SummarizeStalledConditions(runs), byRun: map[string]int{}}
	d.okRuns = make([][]recorder.StalledRun, len(d.conds))
	d.downloads = make([][]recorder.StalledDownload, len(d.conds))
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			continue
		}
		i := slices.IndexFunc(d.conds, func(c recorder.StalledCondition) bool { return stalledCondKey(c) == stalledRunKey(r) })
		d.okRuns[i] = append(d.okRuns[i], r)
		d.byRun[r.RunID] = i
	}
	return d
}

func (d *stalledData) addDownloads(ds []recorder.StalledDownload) {
	for _, dl := range ds {
		i, ok := d.byRun[dl.RunID]
		if !ok {
			d.left++
			continue
		}
		d.downloads[i] = append(d.downloads[i], dl)
	}
}

func buildStalled(dir string) (*section, error) {
	runs, err := recorder.ReadFile[recorder.StalledRun](filepath.Join(dir, stalledRunsFile))
	if err != nil {
		return nil, err
	}
	d := newStalledData(runs)
	s := &section{id: "stalled-reader", title: "stalled-reader",
		intro: "Clients request /large and then stop reading (stalled: a few KiB read, then nothing for the stall, then " +
			"the rest) or read it at a slow constant rate, while /fast runs on its open-loop schedule. A Gunicorn sync " +
			"worker writing to a client that does not read is held in sendall until --timeout kills it (WORKER TIMEOUT in " +
			"the log): the client gets what the socket buffers held, then EOF. A proxy's send_timeout closes a stalled " +
			"client itself; with buffering on the app was rid of the response long before. Every download's outcome is " +
			"what the client saw; the component that ended it comes from evidence about that download: a WORKER TIMEOUT " +
			"line naming the worker that served it, or the proxy's log line closing it."}
	downloads, dErr := recorder.ReadFile[recorder.StalledDownload](filepath.Join(dir, stalledDownloadsFile))
	if dErr == nil {
		d.addDownloads(downloads)
		if f := stalledBytesFigure(d); f != nil {
			s.addFigure(f)
		} else {
			s.skip("Bytes-received figure left out: no ok run in %s has a download in %s.", stalledRunsFile, stalledDownloadsFile)
		}
	} else {
		s.skip("Bytes-received figure and the downloads table left out: %v.", dErr)
	}
	if f := stalledP95Figure(d); f != nil {
		s.addFigure(f)
	} else {
		s.skip("/fast p95 figure left out: no condition in %s has an ok run with a /fast p95 above 0.", stalledRunsFile)
	}
	if f := stalledTimeoutsFigure(d); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Worker-timeouts figure left out: no ok run in %s has its WORKER TIMEOUT lines counted.", stalledRunsFile)
	}
	s.addTable(stalledConditionsTable(d))
	if dErr == nil && len(downloads) > 0 {
		s.addTable(stalledDownloadsTable(d))
	}
	return s, nil
}

// stalledGlyphs is the mark of each outcome in the bytes figure; only a
// complete download is a circle.
var stalledGlyphs = map[string]draw.GlyphDrawer{
	recorder.StalledComplete:  draw.CircleGlyph{},
	recorder.StalledTruncated: draw.BoxGlyph{},
	recorder.StalledReset:     draw.TriangleGlyph{},
	recorder.StalledTimeout:   draw.CrossGlyph{},
	recorder.StalledError:     draw.PlusGlyph{},
}

// stalledBytesFigure draws, per condition, the response's size as a bar
// and each download's received bytes as a mark over it: its shape the
// outcome, its colour the component that ended it. Nil when no ok run has
// a download.
func stalledBytesFigure(d *stalledData) *figure {
	var rows []int
	hi := 0.0
	for i, c := range d.conds {
		if len(d.downloads[i]) > 0 {
			rows = append(rows, i)
			hi = math.Max(hi, float64(c.SizeBytes)/(1<<20))
			for _, dl := range d.downloads[i] {
				hi = math.Max(hi, float64(dl.Bytes)/(1<<20))
			}
		}
	}
	if len(rows) == 0 || hi <= 0 {
		return nil
	}
	f := &figure{name: "stalled-bytes", title: "Bytes received per download, against the response size",
		width: 10 * vg.Inch, height: RowsHeight(len(rows)) + vg.Inch}
	p := NewPlot(f.title, "MiB received (bar: the response's size)", "condition")
	Grid(p, true, false)
	labels := make([]string, len(rows))
	for j, i := range rows {
		labels[j] = stalledLabel(d.conds[i])
	}
	ys := ConditionRows(p, labels)
	sizes := make([]float64, len(rows))
	for j, i := range rows {
		sizes[j] = float64(d.conds[i].SizeBytes) / (1 << 20)
	}
	sb := NewBars(ys, sizes, 0.7, true, ColorAt(6))
	sb.Fill, sb.Line.Color = color.Gray{0xea}, color.Gray{0x99} // light, behind the downloads' marks
	p.Add(sb)
	p.Legend.Add("response size", sb)
	f.addSeries("response size", sb.Drawn())

	addStalledMarks(f, p, d, rows, ys)
	p.X.Min, p.X.Max = 0, hi*1.7 // room on the right for the legend
	f.panels = []*plot.Plot{p}
	f.caption = fmt.Sprintf("Every download of the ok runs (%s): the body bytes the client received, against the "+
		"response's size (Content-Length). Shape: the outcome as the client saw it (complete; truncated: a 200, then EOF "+
		"before Content-Length; reset; timeout: the client's own bound); colour: the component that ended "+
		"it (app_timeout: a WORKER TIMEOUT line names the worker that served it; send_timeout: the proxy logged "+
		"closing it; client: its bound; unknown: no evidence). Downloads of one condition are spread vertically.", stalledDownloadsFile)
	if d.left > 0 {
		f.caption += fmt.Sprintf(" %d downloads of runs that did not end ok are left out.", d.left)
	}
	return f
}

// addStalledMarks marks each download of d's conditions rows (drawn at
// ys) at the bytes it received: shape by outcome, colour by what ended it.
func addStalledMarks(f *figure, p *plot.Plot, d *stalledData, rows []int, ys []float64) {
	// Each download's place in its row, spread so that equal byte counts
	// stay visible.
	type point struct {
		xy             plotter.XY
		outcome, ender string
	}
	var pts []point
	for j, i := range rows {
		ds := d.downloads[i]
		for k, dl := range ds {
			dy := 0.0
			if len(ds) > 1 {
				dy = (float64(k)/float64(len(ds)-1) - 0.5) * 0.5
			}
			pts = append(pts, point{plotter.XY{X: float64(dl.Bytes) / (1 << 20), Y: ys[j] + dy}, dl.Outcome, dl.EndedBy})
		}
	}
	known := func(list []string, v string) string {
		if slices.Contains(list, v) {
			return v
		}
		return list[len(list)-1] // recorder's catch-all: error, unknown
	}
	for _, o := range recorder.StalledOutcomes {
		for ei, e := range recorder.StalledEnders {
			var xys plotter.XYs
			for _, pt := range pts {
				if known(recorder.StalledOutcomes, pt.outcome) == o && known(recorder.StalledEnders, pt.ender) == e {
					xys = append(xys, pt.xy)
				}
			}
			if len(xys) == 0 {
				continue
			}
			var m *plotter.Scatter
			if o == recorder.StalledComplete {
				m = Scatter(xys, ColorAt(ei), vg.Points(3.5))
			} else {
				m = Marks(xys, ColorAt(ei), stalledGlyphs[o])
			}
			name := o
			if e != recorder.EndedByNone {
				name += ", ended by " + e
			}
			p.Add(m)
			p.Legend.Add(name, m)
			f.addSeries(name, len(m.XYs))
		}
	}
}

// stalledP95Figure draws each condition's /fast p95 (median over its ok
// runs, with their range) and p50 (median), on a log axis; nil when
// nothing can be drawn.
func stalledP95Figure(d *stalledData) *figure {
	var rows []LatencyRow
	for i, c := range d.conds {
		var p95s []float64
		for _, r := range d.okRuns[i] {
			if r.P95MS.Valid {
				p95s = append(p95s, r.P95MS.Value)
			}
		}
		if len(p95s) == 0 || !c.P95MS.Valid || !c.P50MS.Valid || c.P50MS.Value <= 0 || slices.Min(p95s) <= 0 {
			continue
		}
		rows = append(rows, LatencyRow{stalledLabel(c), c.P95MS.Value, slices.Min(p95s), slices.Max(p95s), c.P50MS.Value})
	}
	return fastLatencyFigure("stalled-fast-p95", "/fast latency beside stalled readers", 9*vg.Inch, rows,
		"/fast latency (ok responses) per condition: p95 = nearest-rank 95th percentile of a run, point = "+
			"median over the condition's ok runs, line = min to max over them; p50 likewise (median). Log scale. A sync "+
			"worker held by a stalled reader leaves /fast waiting until the worker is killed or the write ends.")
}

// stalledTimeoutsFigure draws, per condition, the WORKER TIMEOUT lines of
// its ok runs against the downloads they ran; nil when no ok run had its
// log read.
func stalledTimeoutsFigure(d *stalledData) *figure {
	var rows []int
	for i, c := range d.conds {
		if c.WorkerTimeouts.Valid {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: "stalled-worker-timeouts", title: "Workers killed by the app's timeout, against the downloads",
		width: 9 * vg.Inch, height: RowsHeight(len(rows))}
	p := NewPlot(f.title, "count, summed over the ok runs", "condition")
	Grid(p, true, false)
	labels := make([]string, len(rows))
	for j, i := range rows {
		labels[j] = stalledLabel(d.conds[i])
	}
	ys := ConditionRows(p, labels)
	stats := []struct {
		name string
		get  func(i int) float64
	}{
		{"WORKER TIMEOUT lines", func(i int) float64 { return d.conds[i].WorkerTimeouts.Value }},
		{"downloads", func(i int) float64 {
			c := d.conds[i]
			return float64(c.Complete + c.Truncated + c.Reset + c.Timeout + c.Other)
		}},
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
		b := NewBars(pos, val, thick*0.9, true, ColorAt(s))
		p.Add(b)
		p.Legend.Add(st.name, b)
		f.addSeries(st.name, b.Drawn())
	}
	p.X.Min, p.X.Max = 0, math.Max(1, hi)*1.5
	f.panels = []*plot.Plot{p}
	f.caption = "Per condition, over its ok runs (" + stalledRunsFile + "): the app's WORKER TIMEOUT log lines (Gunicorn's " +
		"master killing a worker that outlived --timeout; the embedded sync model logs the same), summed, and the " +
		"downloads the runs made. One line per download: every stalled client held a worker to the timeout. None: " +
		"the proxy or the client ended the downloads first, or the server has no worker timeout."
	return f
}

func stalledConditionsTable(d *stalledData) *table {
	t := &table{Caption: "stalled-reader conditions (" + stalledRunsFile + "), over the ok runs: /fast ok of total and its " +
		"p50 and p95 (nearest rank in a run, median over runs), every download by outcome and by the component that " +
		"ended it (from the logs' evidence about each download), the median bytes received (median over runs of each run's median), WORKER TIMEOUT lines " +
		"(summed) and the longest the app held a worker on a download (median over runs).",
		Head: []string{"route", "server", "mode", "clients", "size (MiB)", "rate (KiB/s)", "stall (s)", "app timeout (s)",
			"send_timeout (s)", "runs", "excluded", "/fast ok", "p50 (ms)", "p95 (ms)", "complete", "truncated", "reset",
			"timeout", "other", "by app_timeout", "by send_timeout", "by client", "by unknown", "bytes median (MiB)",
			"workers killed", "app held (s)"}}
	for _, c := range d.conds {
		t.Rows = append(t.Rows, []Cell{Text(c.Route), Text(c.Server), Text(c.Mode), Int(c.Clients),
			Fixed(float64(c.SizeBytes)/(1<<20), 2), Fixed(float64(c.RateBps)/(1<<10), 0), Fixed(c.StallS, 0),
			Opt(c.AppTimeoutS, func(v float64) Cell { return Fixed(v, 0) }), Opt(c.SendTimeoutS, func(v float64) Cell { return Fixed(v, 0) }),
			Int(c.Runs), Int(c.Excluded), {Text: fmt.Sprintf("%d/%d", c.FastOK, c.FastTotal), Num: true},
			Opt(c.P50MS, Sig), Opt(c.P95MS, Sig), Int(c.Complete), Int(c.Truncated), Int(c.Reset),
			Int(c.Timeout), Int(c.Other), Int(c.ByAppTimeout), Int(c.BySendTimeout), Int(c.ByClient),
			Int(c.ByUnknown), Opt(c.BytesMedian, func(v float64) Cell { return Fixed(v/(1<<20), 2) }),
			Opt(c.WorkerTimeouts, whole), Opt(c.AppHeldS, seconds)})
	}
	return t
}

func stalledDownloadsTable(d *stalledData) *table {
	t := &table{Details: "Every download of the ok runs",
		Caption: "Every download of the ok runs (" + stalledDownloadsFile + "): when it stopped reading, resumed, read its " +
			"last byte and ended (seconds from its request), the bytes it received of Content-Length, the status, the app's " +
			"own send time (none: the app left no record, as a killed worker does), its outcome and its ender.",
		Head: []string{"run", "client", "stalled (s)", "resumed (s)", "last byte (s)", "end (s)", "received (MiB)",
			"Content-Length (MiB)", "status", "app send (s)", "outcome", "ended by", "error"}}
	for _, ds := range d.downloads {
		for _, dl := range ds {
			cl := notMeasured
			if dl.ContentLength >= 0 {
				cl = Fixed(float64(dl.ContentLength)/(1<<20), 2)
			}
			status := Text("none")
			if dl.Status != 0 {
				status = Int(dl.Status)
			}
			t.Rows = append(t.Rows, []Cell{Text(dl.RunID), Int(dl.Client), Opt(dl.StalledS, seconds),
				Opt(dl.ResumedS, seconds), Opt(dl.LastByteS, seconds), seconds(dl.EndS),
				Fixed(float64(dl.Bytes)/(1<<20), 2), cl, status, Opt(dl.AppSendS, seconds), Text(dl.Outcome),
				Text(dl.EndedBy), Text(dl.Error)})
		}
	}
	return t
}
