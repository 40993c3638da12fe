package latencygap

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// pagesTable is the load conditions' table (gap-pages.csv), printed by
// the CLI and drawn in the report; its caption says what each column is.
var pagesTable = report.Table[Page]{
	Caption: "latency-gap page loads (" + pageFile + "): redirect chains (each hop a 301/302, on the server's origin or " +
		"each on another) and pages (an HTML document, then its sub-resources on two origins at once: at most 6 connections " +
		"per origin over HTTP/1.1, one over HTTP/2). keepalive: a first visit, connections reused within the load; new: a " +
		"connection per request. load_ms is from the first request's start to the last byte of the last response (median " +
		"over the loads), bound_ms its lower bound from the path (round trips, TLS, cold lookups), server_sum_ms and " +
		"server_max_ms the sum and the largest of the server's own timings (through the last byte) of the load's requests, " +
		"visible_% = server_sum_ms / load_ms: the share of the load the server's timings account for; conns the connections " +
		"a load opened; late_p99_ms the TUN delay line's lateness over the condition, valid: the path delayed as configured.",
	Cols: []report.Column[Page]{
		report.Col("load", func(p *Page) report.Cell {
			l := loadLabel(p.LoadKey) // in one word in the text table: "2-redirects-cross", "page-50-h2"
			return report.Cell{Text: strings.ReplaceAll(strings.ReplaceAll(l, ", ", "-"), " ", "-"), Title: l}
		}),
		report.Col("size_bytes", func(p *Page) report.Cell { return sizeCell(p.SizeBytes) }),
		report.Col("configured_rtt_ms", func(p *Page) report.Cell { return p.rttCell(p.ConfiguredRTTMS) }),
		report.Col("tls", func(p *Page) report.Cell { return report.Text(p.TLS) }),
		report.Col("loss_%", func(p *Page) report.Cell { return p.lossCell() }),
		report.Col("rate", func(p *Page) report.Cell { return p.rateCell() }),
		report.Col("dns", func(p *Page) report.Cell { return report.Text(p.dnsText()) }),
		report.Col("mode", func(p *Page) report.Cell { return report.Text(p.Mode) }),
		report.Col("loads", func(p *Page) report.Cell { return report.Int(p.Loads) }),
		report.Col("load_ms", func(p *Page) report.Cell { return report.Opt(p.LoadMS, report.Decimals(1)) }),
		report.Col("bound_ms", func(p *Page) report.Cell { return report.Fixed(p.BoundMS, 0) }),
		report.Col("server_sum_ms", func(p *Page) report.Cell { return report.Opt(p.ServerSumMS, report.Decimals(2)) }),
		report.Col("server_max_ms", func(p *Page) report.Cell { return report.Opt(p.ServerMaxMS, report.Decimals(2)) }),
		report.Col("visible_%", func(p *Page) report.Cell { return report.Opt(p.VisiblePct, report.Decimals(2)) }),
		report.Col("conns", func(p *Page) report.Cell { return report.Opt(p.Connections, report.Decimals(0)) }),
		report.Col("late_p99_ms", func(p *Page) report.Cell { return report.Opt(p.LatenessP99MS, report.Decimals(3)) }),
		report.Col("valid", func(p *Page) report.Cell { return validCell(p.Valid) }),
	},
}

// loadLabel names a load condition: "2 redirects, cross" or "page 50,
// h2".
func loadLabel(k LoadKey) string {
	switch {
	case k.Kind == KindRedirect && k.Redirects == 1:
		return "1 redirect, " + k.RedirectOrigin
	case k.Kind == KindRedirect:
		return fmt.Sprintf("%d redirects, %s", k.Redirects, k.RedirectOrigin)
	}
	return fmt.Sprintf("page %d, %s", k.Resources, k.Protocol)
}

// waterfallPhases are the parts of a request's bar in the waterfall.
var waterfallPhases = []phase[Fetch]{
	{"waiting for a connection", func(f *Fetch) float64 { return orZero(f.WaitMS) }},
	{"DNS lookup", func(f *Fetch) float64 { return orZero(f.DNSMS) }},
	{"TCP connect", func(f *Fetch) float64 { return orZero(f.ConnectMS) }},
	{"TLS handshake", func(f *Fetch) float64 { return orZero(f.TLSMS) }},
	{"request to first byte", func(f *Fetch) float64 {
		if !f.TTFBMS.Valid {
			return 0
		}
		return f.TTFBMS.Value - orZero(f.WaitMS) - orZero(f.DNSMS) - orZero(f.ConnectMS) - orZero(f.TLSMS)
	}},
	{"rest of the body", func(f *Fetch) float64 { return f.TotalMS - orZero(f.TTFBMS) }},
}

// orZero is m's value, 0 when it was not measured or is below 0.
func orZero(m recorder.Maybe) float64 { return max(or0(m), 0) }

// maxWaterfallRows bounds the requests the waterfall draws.
const maxWaterfallRows = 60

// waterfallLoad picks the load the waterfall draws: of the first page
// condition kept alive (else the first load condition) its ok load of
// median time; its requests in order. nil when there is none.
func waterfallLoad(pages []Page, fetches []Fetch) []Fetch {
	i := slices.IndexFunc(pages, func(p Page) bool { return p.Kind == KindPage && p.Mode == ModeKeepAlive && p.Loads > 0 })
	if i < 0 {
		i = slices.IndexFunc(pages, func(p Page) bool { return p.Loads > 0 })
	}
	if i < 0 {
		return nil
	}
	key := &pages[i].LoadKey
	byLoad := map[int][]Fetch{}
	for _, f := range fetches {
		if f.LoadKey == *key {
			byLoad[f.Load] = append(byLoad[f.Load], f)
		}
	}
	var ok []Load // their times and errors as gap-page-loads.csv has them
	for l, fs := range byLoad {
		if ld := summarizeLoad(*key, l, Settings{}, 0, fs, nil); ld.Error == "" {
			ok = append(ok, ld)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	slices.SortFunc(ok, func(a, b Load) int { return cmp.Or(cmp.Compare(a.LoadMS, b.LoadMS), a.Load-b.Load) })
	fs := byLoad[ok[(len(ok)-1)/2].Load]
	slices.SortFunc(fs, func(a, b Fetch) int { return a.Hop - b.Hop })
	return fs[:min(len(fs), maxWaterfallRows)]
}

// waterfallFigure draws one load's requests as a browser's developer
// tools do; nil without a load.
func waterfallFigure(pages []Page, fetches []Fetch) *report.Drawing {
	fs := waterfallLoad(pages, fetches)
	if len(fs) == 0 {
		return nil
	}
	k := fs[0].LoadKey
	title := fmt.Sprintf("Waterfall of one load: %s, %s, RTT %g ms, %s", loadLabel(k), report.ByteSize(k.SizeBytes), k.ConfiguredRTTMS, k.Mode)
	height := max(3*vg.Inch, vg.Length(1.4+0.17*float64(len(fs)))*vg.Inch)
	d := report.NewDrawing("latency-gap-waterfall", title, 8*vg.Inch, height)
	p := report.NewPlot(d.Title(), "time since the load's first request (ms)", "request")
	report.Grid(p, true, false)
	labels, at := make([]string, len(fs)), make([]float64, len(fs)) // at: where each bar's next phase starts
	for i, f := range fs {
		labels[i], at[i] = fmt.Sprintf("%s %d (origin %d)", f.Role, f.Hop, f.Origin), f.StartMS
	}
	ys := report.ConditionRows(p, labels)
	hi := 0.0
	for pi, ph := range waterfallPhases {
		n := 0
		for i := range fs {
			v := ph.get(&fs[i])
			if v <= 0 || math.IsNaN(v) {
				continue
			}
			l := report.Line(plotter.XYs{{X: at[i], Y: ys[i]}, {X: at[i] + v, Y: ys[i]}}, report.ColorAt(pi))
			l.LineStyle.Width = vg.Points(7)
			p.Add(l)
			if n == 0 {
				p.Legend.Add(ph.name, l)
			}
			at[i] += v
			hi = max(hi, at[i])
			n++
		}
		if n > 0 {
			d.AddSeries(ph.name, n)
		}
	}
	p.X.Min, p.X.Max = 0, hi*1.4 // room for the legend, right of the last bar
	p.Legend.Top = true
	d.AddPanel(p)
	sum := "nothing (none reported)"
	if s := summarizeLoad(LoadKey{}, 0, Settings{}, 0, fs, nil).ServerSumMS; s.Valid {
		sum = fmt.Sprintf("%.2f ms", s.Value)
	}
	d.SetCaption(fmt.Sprintf("One load (the median of its condition's ok loads, %s): each row a request, from its start, "+
		"split into the wait for one of its origin's connections, and on a new connection its DNS lookup, TCP connect and TLS "+
		"handshake, then the request until the response's first byte (a round trip and the server's time) and the rest of the "+
		"body. The server's own timings of these requests sum to %s.", fetchFile, sum))
	return d
}
