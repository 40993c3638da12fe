package latencygap

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// timesFigure is grouped bars per condition, its blind share under each
// group.
func timesFigure(rows []Row) *report.GroupedBars {
	names := make([]string, len(rows))
	for i, r := range rows {
		blind := "blind –"
		if r.Gap.ServerBlindPct.Valid {
			blind = fmt.Sprintf("blind %.1f%%", r.Gap.ServerBlindPct.Value)
		}
		names[i] = label(r.Gap.SizeBytes, r.Gap.ConfiguredRTTMS, r.Gap.Settings) + "\n" + blind
	}
	series := func(name string, get func(*Gap) recorder.Maybe) report.BarSeries {
		s := report.BarSeries{Name: name}
		for i := range rows {
			s.Values = append(s.Values, report.ValueOf(get(&rows[i].Gap), 1))
		}
		return s
	}
	return &report.GroupedBars{Name: "latency-gap", Title: "Server-measured vs client-measured time per size and RTT",
		XLabel: "response size, added round-trip time (RTT), share the server does not see", YLabel: "time (ms)",
		Categories: names, ValueLabels: true, Width: 8 * vg.Inch, Height: 4.8 * vg.Inch,
		Series: []report.BarSeries{
			series("server (Server-Timing)", func(g *Gap) recorder.Maybe { return g.ServerMS }),
			series("client, kept-alive connection", func(g *Gap) recorder.Maybe { return g.ClientKeepaliveMS }),
			series("client, new connection", func(g *Gap) recorder.Maybe { return g.ClientNewMS }),
		},
		Caption: "Bar = median over the condition's runs, as " + gapFile + " reports it: the server's own " +
			"processing time as it reports it in its Server-Timing header (what a server-side dashboard sees) and the " +
			"client's total time on a kept-alive and on a new connection (the latter includes the TCP handshake). " +
			"Blind = 1 − server / new-connection time. Each bar is labelled with its value in ms."}
}

// rateLabel writes bits per second as 10 Mbit/s.
func rateLabel(b int64) string {
	u := rateUnits[0]
	for _, u = range rateUnits { // the last, bit/s, when none fits
		if float64(b) >= u.mult {
			break
		}
	}
	return strconv.FormatFloat(float64(b)/u.mult, 'g', 4, 64) + " " + u.label
}

// label names a condition on a figure's axis, a line per part: its path
// beyond its RTT (asymmetric delays, loss and rate) on one.
func label(bytes int, rtt float64, s Settings) string {
	lines := []string{report.ByteSize(bytes), fmt.Sprintf("RTT %g ms", rtt)}
	var path []string
	if s.DelayUpMS != s.DelayDownMS {
		path = append(path, fmt.Sprintf("%g ms up, %g ms down", s.DelayUpMS, s.DelayDownMS))
	}
	if s.LossPct > 0 {
		path = append(path, fmt.Sprintf("%g%% loss", s.LossPct))
	}
	if s.RateBits > 0 {
		path = append(path, rateLabel(s.RateBits))
	}
	if len(path) > 0 {
		lines = append(lines, strings.Join(path, ", "))
	}
	if s.TLS != "" && s.TLS != TLSNone {
		lines = append(lines, "TLS "+s.TLS)
	}
	if s.WorkMS > 0 {
		lines = append(lines, fmt.Sprintf("work %g ms", s.WorkMS))
	}
	if dnsOn(s) {
		lines = append(lines, "DNS "+s.DNS)
		if s.DNSFamilies != "" && s.DNSFamilies != FamiliesA {
			lines = append(lines, s.DNSFamilies)
		}
		if s.DNSAAAADelayMS > 0 {
			lines[len(lines)-1] += fmt.Sprintf(" %g ms", s.DNSAAAADelayMS)
		}
	}
	return strings.Join(lines, "\n")
}

// conditionKey identifies a condition in gap.csv and gap-requests.csv alike.
type conditionKey struct {
	size int
	rtt  float64
	Settings
}

// phase is one part of a request's time (of a T row), NaN when the row
// has none: a new connection's (phases) or a load's request's
// (waterfallPhases).
type phase[T any] struct {
	name string
	get  func(*T) float64
}

// phases split a new-connection request's total time, as
// phasesFigure's caption says.
var phases = []phase[Request]{
	{"DNS lookup", func(r *Request) float64 { return or0(r.DNSMS) }},
	{"TCP connect", func(r *Request) float64 { return r.ConnectMS }},
	{"TLS handshake", func(r *Request) float64 { return or0(r.HandshakeMS) }},
	{"request to first byte", func(r *Request) float64 { return r.TTFBMS - or0(r.DNSMS) - r.ConnectMS - or0(r.HandshakeMS) }},
	{"rest of the body", func(r *Request) float64 { return r.TotalMS - r.TTFBMS }},
}

// or0 is m's value, 0 when it was not measured.
func or0(m recorder.Maybe) float64 {
	if m.Valid {
		return m.Value
	}
	return 0
}

// phasesFigure stacks, per condition, the medians of each phase of its
// ok new-connection requests; no bar when none has a phase.
func phasesFigure(rows []Row, reqs []Request) *report.GroupedBars {
	byKey := map[conditionKey][]Request{}
	for _, r := range reqs {
		if r.Mode == ModeNew && r.NewConn && okRequest(r) {
			k := conditionKey{r.SizeBytes, r.ConfiguredRTTMS, r.Settings}
			byKey[k] = append(byKey[k], r)
		}
	}
	names := make([]string, len(rows))
	series := make([]report.BarSeries, len(phases))
	for i, ph := range phases {
		series[i] = report.BarSeries{Name: ph.name, Values: make([]float64, len(rows))}
	}
	for j, r := range rows {
		g := r.Gap
		names[j] = label(g.SizeBytes, g.ConfiguredRTTMS, g.Settings)
		rs := byKey[conditionKey{g.SizeBytes, g.ConfiguredRTTMS, g.Settings}]
		for i, ph := range phases {
			xs := make([]float64, len(rs))
			for k := range rs {
				xs[k] = max(ph.get(&rs[k]), 0) // NaN stays NaN: Median skips it, and is NaN (no bar) with none
			}
			series[i].Values[j] = recorder.Median(xs)
		}
	}
	return &report.GroupedBars{Name: "latency-gap-phases", Title: "Where a new connection's time goes, per condition",
		XLabel: "condition", YLabel: "time (ms, median per phase)", Categories: names, Series: series, Stacked: true,
		Width: 8 * vg.Inch, Height: 4.8 * vg.Inch,
		Caption: "Each bar stacks the medians, over the condition's ok new-connection requests (" + requestFile +
			"), of the lookup of the server's name (DNS: 0 without, or when the client's cache answered), the TCP handshake (connect, " +
			"a happy-eyeballs fallback's wait included), the TLS handshake, the request until the first response byte (a round trip plus the " +
			"server's time) and the rest of the body (the slow-start rounds of a larger response, and losses). A sum of medians, so it can " +
			"differ a little from the median total in the table."}
}

// blindByWorkFigure draws the server's blind share against its
// processing time, a line per condition but its work that has at least
// two; nil without one.
func blindByWorkFigure(rows []Row) *report.Drawing {
	type series struct {
		key conditionKey
		xys plotter.XYs
	}
	var all []*series
	for _, r := range rows {
		g := r.Gap
		if !g.ServerBlindPct.Valid {
			continue
		}
		k := conditionKey{g.SizeBytes, g.ConfiguredRTTMS, g.Settings}
		k.WorkMS = 0
		i := slices.IndexFunc(all, func(s *series) bool { return s.key == k })
		if i < 0 {
			all = append(all, &series{key: k})
			i = len(all) - 1
		}
		all[i].xys = append(all[i].xys, plotter.XY{X: g.WorkMS, Y: g.ServerBlindPct.Value})
	}
	all = slices.DeleteFunc(all, func(s *series) bool { return len(s.xys) < 2 })
	if len(all) == 0 {
		return nil
	}
	d := report.NewDrawing("latency-gap-blind-by-work", "How blind the server is against its processing time", 8*vg.Inch, 4.8*vg.Inch)
	p := report.NewPlot(d.Title(), "server processing time per request (ms)", "server blind (% of the client's new-connection time)")
	report.Grid(p, true, true)
	for i, s := range all {
		slices.SortFunc(s.xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		l := report.Line(s.xys, report.ColorAt(i))
		p.Add(l, report.Scatter(s.xys, report.ColorAt(i), vg.Points(2.5)))
		name := strings.ReplaceAll(label(s.key.size, s.key.rtt, s.key.Settings), "\n", ", ")
		p.Legend.Add(name, l)
		d.AddSeries(name, len(s.xys))
	}
	p.Y.Min, p.Y.Max = 0, 100
	d.AddPanel(p)
	d.SetCaption("Server blind = 1 − server / client new-connection time, per processing time (" + gapFile + " work_ms): the more " +
		"time the server spends on a request, the larger its share of what the client waits, and the less blind its own timing is.")
	return d
}
