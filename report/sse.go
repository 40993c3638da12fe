package report

import (
	"fmt"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// The sse results files: the run summaries mark the directory.
var sseRunsFile = recorder.FileName[recorder.SSERun]()

// SSE is the sse section, which sse's registration in lab carries.
var SSE = Section{Name: "sse", Marker: sseRunsFile, build: buildSSE}

func sseLabel(c recorder.SSECondition) string {
	return fmt.Sprintf("%s, %s, %d streams", c.Route, c.Server, c.Streams)
}

func buildSSE(dir string) (*section, error) {
	runs, err := recorder.ReadFile[recorder.SSERun](filepath.Join(dir, sseRunsFile))
	if err != nil {
		return nil, err
	}
	conds := recorder.SummarizeSSEConditions(runs)
	s := &section{id: "sse", title: "sse",
		intro: "SSE clients each hold a stream of an event every interval, stamped with the server's clock, while /fast runs " +
			"on its open-loop schedule. An event's delivery delay is the client's clock when it had read it minus the stamp. " +
			"A stream holds its worker for its whole length whatever the proxy does, so N streams on sync-N starve /fast. " +
			"Routes ending in -http10 ask the app in HTTP/1.0 (proxy_http_version 1.0, NGINX's default): the app answers " +
			"close-delimited instead of chunked, and a buffering proxy then holds the stream until a buffer fills or it ends; " +
			"-accel-no and -accel-yes are the app's X-Accel-Buffering."}
	for _, f := range []struct {
		fig  *figure
		what string
	}{
		{sseFigure("sse-delay", "SSE delivery delay", "delivery delay (ms, log scale)", conds, func(c recorder.SSECondition) []recorder.Maybe {
			return []recorder.Maybe{c.DelayP50MS, c.DelayP95MS, c.DelayMaxMS}
		}, []string{"p50", "p95", "max"}, "Each event's delivery delay: p50 and p95 are medians of the runs' nearest-rank values, max the largest. Log scale."), "delivery delay"},
		{sseFigure("sse-fast", "/fast latency beside SSE streams", "/fast latency (ms, log scale)", conds, func(c recorder.SSECondition) []recorder.Maybe {
			return []recorder.Maybe{c.P50MS, c.P95MS}
		}, []string{"p50", "p95"}, "/fast latency (medians over the ok runs of each run's nearest-rank value). Log scale. "+
			"Streams as many as the sync workers leave /fast waiting for a stream to end."), "/fast latency"},
	} {
		if f.fig != nil {
			s.addFigure(f.fig)
		} else {
			s.skip("%s figure left out: no condition in %s has an ok run with a value above 0.", f.what, sseRunsFile)
		}
	}
	t := &table{Caption: "sse conditions (" + sseRunsFile + "), over the ok runs: events received of expected, streams " +
		"complete, delivery delay, first byte, the most streams the app held at once and the most workers holding one, and /fast.",
		Head: []string{"route", "server", "streams", "runs", "excluded", "events", "expected", "complete", "delay p50 (ms)",
			"delay p95 (ms)", "delay max (ms)", "first byte (ms)", "held", "workers holding", "workers", "/fast ok", "/fast planned",
			"/fast p50 (ms)", "/fast p95 (ms)"}}
	count := func(v float64) Cell { return Fixed(v, 0) }
	for _, c := range conds {
		t.Rows = append(t.Rows, []Cell{Text(c.Route), Text(c.Server), Int(c.Streams), Int(c.Runs), Int(c.Excluded),
			Int(c.Events), Int(c.EventsExpected), Int(c.StreamsComplete), Opt(c.DelayP50MS, Sig), Opt(c.DelayP95MS, Sig),
			Opt(c.DelayMaxMS, Sig), Opt(c.FirstByteMS, Sig), Opt(c.HeldMax, count), Opt(c.WorkersHoldingMax, count),
			Opt(c.Workers, count), Int(c.FastOK), Int(c.FastPlanned), Opt(c.P50MS, Sig), Opt(c.P95MS, Sig)})
	}
	s.addTable(t)
	return s, nil
}

// sseFigure draws, per condition, the values get returns (one marker
// series each, named), on a log axis; nil when no condition has them all
// above 0.
func sseFigure(name, title, axis string, conds []recorder.SSECondition, get func(recorder.SSECondition) []recorder.Maybe, names []string, caption string) *figure {
	var rows []recorder.SSECondition
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range conds {
		ok := true
		for _, v := range get(c) {
			ok = ok && v.Valid && v.Value > 0
		}
		if !ok {
			continue
		}
		rows = append(rows, c)
		for _, v := range get(c) {
			lo, hi = math.Min(lo, v.Value), math.Max(hi, v.Value)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: name, title: title, width: 8 * vg.Inch, height: rowsHeight(len(rows))}
	p := newPlot(f.title, axis, "condition")
	grid(p, true, false)
	labels := make([]string, len(rows))
	for i, c := range rows {
		labels[i] = sseLabel(c)
	}
	ys := conditionRows(p, labels)
	shapes := []draw.GlyphDrawer{draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	for i, n := range names {
		var xys plotter.XYs
		for j, c := range rows {
			xys = append(xys, plotter.XY{X: get(c)[i].Value, Y: ys[j]})
		}
		m := marks(xys, colorAt(i), shapes[i%len(shapes)])
		p.Add(m)
		p.Legend.Add(n, m)
		f.addSeries(n, len(m.XYs))
	}
	setLog(&p.X, lo, hi)
	p.X.Max = hi * 6
	f.panels = []*plot.Plot{p}
	f.caption = caption
	return f
}
