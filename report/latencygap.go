package report

import (
	"fmt"
	"math"
	"path/filepath"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/slowlab/slowlab/recorder"
)

// gapFile is the latency-gap summary: one row per response size and
// round-trip time.
var gapFile = recorder.FileName[recorder.GapRow]()

// LatencyGap is the latency-gap section, which latency-gap's registration in lab carries.
var LatencyGap = Section{Name: "latency-gap", Marker: gapFile, build: buildLatencyGap}

func buildLatencyGap(dir string) (*section, error) {
	rows, err := recorder.ReadFile[recorder.GapRow](filepath.Join(dir, gapFile))
	if err != nil {
		return nil, err
	}
	s := &section{id: "latency-gap", title: "latency-gap",
		intro: "What the server measures of a request against what the client waits, on a kept-alive and a " +
			"new connection (docs/experiments.md section 3). Server blind = 1 − server / client new-connection time, where server is " +
			"what the server reports in its Server-Timing header; to last byte, what it measured through the last body byte written."}
	if f := latencyGapFigure(rows); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Latency-gap figure left out: %s has no timings.", gapFile)
	}
	reqs, present, err := readOptional[recorder.GapRequest](dir)
	if err != nil {
		return nil, err
	}
	if f := gapPhasesFigure(rows, reqs); f != nil {
		s.addFigure(f)
	} else if !present {
		s.skip("New-connection phases left out: no %s.", recorder.FileName[recorder.GapRequest]())
	}
	if f := blindByWorkFigure(rows); f != nil {
		s.addFigure(f)
	}
	t := &table{Caption: "Latency-gap conditions (" + gapFile + "): each time is the median over the runs; RTT " +
		"configured is what the path was asked to add, measured what the kernel measured on the connections (TCP_INFO).",
		Head: []string{"size", "RTT configured (ms)", "path", "TLS", "work (ms)", "RTT measured (ms)", "server (ms)", "client keep-alive (ms)",
			"client new connection (ms)", "TLS handshake (ms)", "server blind (%)", "server to last byte (ms)", "blind to last byte (%)", "runs", "delay method"}}
	for _, g := range rows {
		t.Rows = append(t.Rows, []Cell{{Text: size(g.SizeBytes), Title: fmt.Sprint(g.SizeBytes, " bytes"), Num: true},
			Sig(g.ConfiguredRTTMS), Text(gapPath(g.GapSettings)), Text(gapTLS(g.TLS)), Text(gapWork(g.GapSettings)), Opt(g.RTTMS, Sig),
			Opt(g.ServerMS, Sig), Opt(g.ClientKeepaliveMS, Sig), Opt(g.ClientNewMS, Sig), Opt(g.HandshakeMS, Sig),
			Opt(g.ServerBlindPct, func(v float64) Cell { return Fixed(v, 1) }),
			Opt(g.ServerLastByteMS, Sig), Opt(g.ServerLastByteBlindPct, func(v float64) Cell { return Fixed(v, 1) }),
			Int(g.Runs), Text(g.DelayMethod)})
	}
	s.addTable(t)
	return s, nil
}

// latencyGapFigure draws grouped bars per size and RTT: server-measured,
// client keep-alive and client new-connection time, with the blind share
// under each group.
func latencyGapFigure(rows []recorder.GapRow) *figure {
	names := make([]string, len(rows))
	for i, g := range rows {
		blind := "blind –"
		if g.ServerBlindPct.Valid {
			blind = fmt.Sprintf("blind %.1f%%", g.ServerBlindPct.Value)
		}
		names[i] = gapLabel(g.SizeBytes, g.ConfiguredRTTMS, g.GapSettings) + "\n" + blind
	}
	series := func(name string, get func(recorder.GapRow) recorder.Maybe) BarSeries {
		s := BarSeries{Name: name}
		for _, g := range rows {
			s.Values = append(s.Values, ValueOf(get(g), 1))
		}
		return s
	}
	g := &GroupedBars{Name: "latency-gap", Title: "Server-measured vs client-measured time per size and RTT",
		XLabel: "response size, added round-trip time (RTT), share the server does not see", YLabel: "time (ms)",
		Categories: names, ValueLabels: true, Width: 8 * vg.Inch, Height: 4.8 * vg.Inch,
		Series: []BarSeries{
			series("server (Server-Timing)", func(g recorder.GapRow) recorder.Maybe { return g.ServerMS }),
			series("client, kept-alive connection", func(g recorder.GapRow) recorder.Maybe { return g.ClientKeepaliveMS }),
			series("client, new connection", func(g recorder.GapRow) recorder.Maybe { return g.ClientNewMS }),
		},
		Caption: "Bar = median over the condition's runs, as " + gapFile + " reports it: the server's own " +
			"processing time as it reports it in its Server-Timing header (what a server-side dashboard sees) and the " +
			"client's total time on a kept-alive and on a new connection (the latter includes the TCP handshake). " +
			"Blind = 1 − server / new-connection time. Each bar is labelled with its value in ms."}
	return g.figure()
}

// barLabels writes each bar's value above it, so that bars too short to
// see on a shared axis can still be read.
func barLabels(pos, val []float64) *plotter.Labels {
	var xyl plotter.XYLabels
	for i, v := range val {
		if math.IsNaN(v) {
			continue
		}
		xyl.XYs = append(xyl.XYs, plotter.XY{X: pos[i], Y: v})
		xyl.Labels = append(xyl.Labels, Sig(v).Text)
	}
	l, err := plotter.NewLabels(xyl)
	if err != nil {
		panic("report: " + err.Error()) // values are finite
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(sans, 7)
		l.TextStyle[i].XAlign = draw.XCenter
	}
	l.Offset = vg.Point{Y: vg.Points(2)}
	return l
}
