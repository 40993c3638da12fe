package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
)

// gapPath describes a condition's path beyond its RTT: asymmetric
// delays, loss and rate ("-" for a plain one).
func gapPath(s recorder.GapSettings) string {
	var parts []string
	if s.DelayUpMS != s.DelayDownMS {
		parts = append(parts, fmt.Sprintf("%g ms up, %g ms down", s.DelayUpMS, s.DelayDownMS))
	}
	if s.LossPct > 0 {
		parts = append(parts, fmt.Sprintf("%g%% loss", s.LossPct))
	}
	if s.RateBits > 0 {
		parts = append(parts, bitRate(s.RateBits))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// bitRate writes bits per second as 10 Mbit/s.
func bitRate(b int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"Gbit/s", 1e9}, {"Mbit/s", 1e6}, {"kbit/s", 1e3}} {
		if b >= u.mult {
			return strconv.FormatFloat(float64(b)/float64(u.mult), 'g', 4, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(b, 10) + " bit/s"
}

// gapTLS names a TLS mode ("none" when the column is empty).
func gapTLS(mode string) string {
	if mode == "" || mode == recorder.GapTLSNone {
		return "none"
	}
	return "TLS " + mode
}

// gapWork describes the server's work per request ("-" for none).
func gapWork(s recorder.GapSettings) string {
	if s.WorkMS == 0 {
		return "-"
	}
	return fmt.Sprintf("%g (%s)", s.WorkMS, s.WorkKind)
}

// gapLabel names a condition on a figure's axis, a line per part.
func gapLabel(bytes int, rtt float64, s recorder.GapSettings) string {
	lines := []string{ByteSize(bytes), fmt.Sprintf("RTT %g ms", rtt)}
	if p := gapPath(s); p != "-" {
		lines = append(lines, p)
	}
	if s.TLS != "" && s.TLS != recorder.GapTLSNone {
		lines = append(lines, gapTLS(s.TLS))
	}
	if s.WorkMS > 0 {
		lines = append(lines, fmt.Sprintf("work %g ms", s.WorkMS))
	}
	return strings.Join(lines, "\n")
}

// gapKey identifies a condition in gap.csv and gap-requests.csv alike.
type gapKey struct {
	size int
	rtt  float64
	recorder.GapSettings
}

// phase is one part of a new connection's time.
type phase struct {
	name string
	get  func(recorder.GapRequest) (float64, bool)
}

// gapPhases split a new-connection request's total time: the TCP
// handshake, the TLS handshake, the request until the response's first
// byte (one round trip and the server's time) and the rest of the body
// (the slow-start rounds of a larger response).
var gapPhases = []phase{
	{"TCP connect", func(r recorder.GapRequest) (float64, bool) { return r.ConnectMS, !math.IsNaN(r.ConnectMS) }},
	{"TLS handshake", func(r recorder.GapRequest) (float64, bool) {
		if !r.HandshakeMS.Valid {
			return 0, true
		}
		return r.HandshakeMS.Value, true
	}},
	{"request to first byte", func(r recorder.GapRequest) (float64, bool) {
		hs := 0.0
		if r.HandshakeMS.Valid {
			hs = r.HandshakeMS.Value
		}
		v := r.TTFBMS - r.ConnectMS - hs
		return v, !math.IsNaN(v)
	}},
	{"rest of the body", func(r recorder.GapRequest) (float64, bool) {
		v := r.TotalMS - r.TTFBMS
		return v, !math.IsNaN(v)
	}},
}

// gapPhasesFigure stacks, per condition, the medians of each phase of
// its ok new-connection requests.
func gapPhasesFigure(rows []recorder.GapRow, reqs []recorder.GapRequest) *figure {
	if len(rows) == 0 || len(reqs) == 0 {
		return nil
	}
	byKey := map[gapKey][]recorder.GapRequest{}
	for _, r := range reqs {
		if r.Mode == recorder.GapNew && r.NewConn && r.Status >= 200 && r.Status <= 299 && r.Error == "" {
			k := gapKey{r.SizeBytes, r.ConfiguredRTTMS, r.GapSettings}
			byKey[k] = append(byKey[k], r)
		}
	}
	f := &figure{name: "latency-gap-phases", title: "Where a new connection's time goes, per condition",
		width: 8 * vg.Inch, height: 4.8 * vg.Inch}
	p := NewPlot(f.title, "condition", "time (ms, median per phase)")
	Grid(p, false, true)
	names := make([]string, len(rows))
	base := make([]float64, len(rows))
	vals := make([][]float64, len(gapPhases))
	for i := range vals {
		vals[i] = make([]float64, len(rows))
	}
	any := false
	for j, g := range rows {
		names[j] = gapLabel(g.SizeBytes, g.ConfiguredRTTMS, g.GapSettings)
		rs := byKey[gapKey{g.SizeBytes, g.ConfiguredRTTMS, g.GapSettings}]
		for i, ph := range gapPhases {
			var xs []float64
			for _, r := range rs {
				if v, ok := ph.get(r); ok {
					xs = append(xs, math.Max(v, 0))
				}
			}
			vals[i][j] = math.NaN()
			if len(xs) > 0 {
				vals[i][j] = recorder.Median(xs)
				any = true
			}
		}
	}
	if !any {
		return nil
	}
	p.NominalX(names...)
	hi := 0.0
	for i, ph := range gapPhases {
		starts := slices.Clone(base)
		for j, v := range vals[i] {
			if !math.IsNaN(v) {
				base[j] += v
				hi = math.Max(hi, base[j])
			}
		}
		b := NewStackedBars(seq(len(rows)), starts, vals[i], 0.6, ColorAt(i))
		p.Add(b)
		p.Legend.Add(ph.name, b)
		f.addSeries(ph.name, b.Drawn())
	}
	p.X.Min, p.X.Max = -0.6, float64(len(rows))-0.4
	p.Y.Min, p.Y.Max = 0, hi*1.35
	p.Legend.Left = true
	f.panels = []*plot.Plot{p}
	f.caption = "Each bar stacks the medians, over the condition's ok new-connection requests (" + recorder.FileName[recorder.GapRequest]() +
		"), of the TCP handshake (connect), the TLS handshake, the request until the first response byte (a round trip plus the " +
		"server's time) and the rest of the body (the slow-start rounds of a larger response, and losses). A sum of medians, so it can " +
		"differ a little from the median total in the table."
	return f
}

// seq returns 0, 1, ..., n-1 as positions.
func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// blindByWorkFigure draws the server's blind share against its processing
// time, one line per size, RTT, path and TLS mode, when gap.csv has at
// least two processing times for one of them.
func blindByWorkFigure(rows []recorder.GapRow) *figure {
	type series struct {
		key gapKey
		xys plotter.XYs
	}
	var all []*series
	for _, g := range rows {
		if !g.ServerBlindPct.Valid {
			continue
		}
		k := gapKey{g.SizeBytes, g.ConfiguredRTTMS, g.GapSettings}
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
	f := &figure{name: "latency-gap-blind-by-work", title: "How blind the server is against its processing time",
		width: 8 * vg.Inch, height: 4.8 * vg.Inch}
	p := NewPlot(f.title, "server processing time per request (ms)", "server blind (% of the client's new-connection time)")
	Grid(p, true, true)
	for i, s := range all {
		slices.SortFunc(s.xys, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		l := Line(s.xys, ColorAt(i))
		p.Add(l, Scatter(s.xys, ColorAt(i), vg.Points(2.5)))
		name := strings.ReplaceAll(gapLabel(s.key.size, s.key.rtt, s.key.GapSettings), "\n", ", ")
		p.Legend.Add(name, l)
		f.addSeries(name, len(s.xys))
	}
	p.Y.Min, p.Y.Max = 0, 100
	f.panels = []*plot.Plot{p}
	f.caption = "Server blind = 1 − server / client new-connection time, per processing time (" + gapFile + " work_ms): the more " +
		"time the server spends on a request, the larger its share of what the client waits, and the less blind its own timing is."
	return f
}
