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

// The slow-upload results files: the run summaries mark the directory.
var (
	uploadRunsFile = recorder.FileName[recorder.UploadRun]()
	uploadsFile    = recorder.FileName[recorder.Upload]()
)

// SlowUpload is the slow-upload section, which slow-upload's registration in lab carries.
var SlowUpload = Section{Name: "slow-upload", Marker: uploadRunsFile, build: buildSlowUpload}

func uploadLabel(c recorder.UploadCondition) string {
	l := fmt.Sprintf("%s, %s, %d × %.0f MiB", c.Route, c.Server, c.Uploaders, float64(c.SizeBytes)/(1<<20))
	if c.AppTimeoutS.Valid {
		l += fmt.Sprintf(", timeout %.0f s", c.AppTimeoutS.Value)
	}
	return l
}

func buildSlowUpload(dir string) (*section, error) {
	runs, err := recorder.ReadFile[recorder.UploadRun](filepath.Join(dir, uploadRunsFile))
	if err != nil {
		return nil, err
	}
	conds := recorder.SummarizeUploadConditions(runs)
	s := &section{id: "slow-upload", title: "slow-upload",
		intro: "Slow clients POST their bodies at a paced rate while /fast runs on its open-loop schedule. A sync worker " +
			"reading a slow request body is as stuck as one writing to a slow reader; a proxy with request buffering on " +
			"(NGINX's default) reads the whole body first, in memory up to client_body_buffer_size and in a temp file " +
			"beyond, and hands it to the app at once. An upload that outlives the app's timeout has its worker killed: its " +
			"outcome is a reset (direct) or the proxy's 5xx."}
	if f := uploadP95Figure(conds); f != nil {
		s.addFigure(f)
	} else {
		s.skip("/fast p95 figure left out: no condition in %s has an ok run with a /fast p95 above 0.", uploadRunsFile)
	}
	if f := uploadTimesFigure(conds); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Upload times figure left out: no condition in %s has an upload that ended ok.", uploadRunsFile)
	}
	t := &table{Caption: "slow-upload conditions (" + uploadRunsFile + "), over the ok runs: /fast p50 and p95 (nearest rank " +
		"in a run, median over runs; p95 range over runs), the client's send time and the app's time in body reads " +
		"(medians over the uploads that ended ok), every upload's outcome, Gunicorn's WORKER TIMEOUT lines, and the " +
		"largest proxy temp files and memory peaks.",
		Head: []string{"route", "server", "uploaders", "size (MiB)", "app timeout (s)", "runs", "excluded", "p50 (ms)", "p95 (ms)",
			"p95 min (ms)", "p95 max (ms)", "send (s)", "app body read (s)", "ok", "5xx", "reset", "timeout", "other",
			"workers killed", "temp peak (MiB)", "app memory (MiB)", "proxy memory (MiB)"}}
	for _, c := range conds {
		t.Rows = append(t.Rows, []Cell{Text(c.Route), Text(c.Server), Int(c.Uploaders), Fixed(float64(c.SizeBytes)/(1<<20), 1),
			Opt(c.AppTimeoutS, func(v float64) Cell { return Fixed(v, 0) }), Int(c.Runs), Int(c.Excluded),
			Opt(c.P50MS, Sig), Opt(c.P95MS, Sig), Opt(c.P95MinMS, Sig), Opt(c.P95MaxMS, Sig), Opt(c.SendS, seconds),
			Opt(c.AppReadS, seconds), Int(c.OK), Int(c.Err5xx), Int(c.Reset), Int(c.Timeout), Int(c.Other),
			Opt(c.WorkerTimeouts, func(v float64) Cell { return Fixed(v, 0) }), Opt(c.TempPeakMiB, mib),
			Opt(c.AppMemMiB, mib), Opt(c.ProxyMemMiB, mib)})
	}
	s.addTable(t)
	uploads, err := recorder.ReadFile[recorder.Upload](filepath.Join(dir, uploadsFile))
	if err != nil {
		s.skip("Uploads that did not end ok left out: %v.", err)
		return s, nil
	}
	ft := &table{Caption: "Uploads that did not end ok (" + uploadsFile + "): what the client saw. A sync worker killed by " +
		"the app's timeout resets the client's connection directly; through a proxy the client gets the proxy's 5xx.",
		Head: []string{"run", "client", "sent (MiB)", "send (s)", "status", "outcome", "error"}}
	for _, u := range uploads {
		if u.Outcome == recorder.UploadOK {
			continue
		}
		status := Text("none")
		if u.Status != 0 {
			status = Int(u.Status)
		}
		ft.Rows = append(ft.Rows, []Cell{Text(u.RunID), Int(u.Client), Fixed(float64(u.SentBytes)/(1<<20), 2), seconds(u.SendS),
			status, Text(u.Outcome), Text(u.Error)})
	}
	if len(ft.Rows) > 0 {
		s.addTable(ft)
	}
	return s, nil
}

// uploadP95Figure draws each condition's /fast p95 (median over ok runs,
// with its range) and p50, on a log axis; nil when nothing can be drawn.
func uploadP95Figure(conds []recorder.UploadCondition) *figure {
	var rows []LatencyRow
	for _, c := range conds {
		if c.P95MinMS.Valid && c.P95MinMS.Value > 0 && c.P50MS.Valid && c.P50MS.Value > 0 {
			rows = append(rows, LatencyRow{uploadLabel(c), c.P95MS.Value, c.P95MinMS.Value, c.P95MaxMS.Value, c.P50MS.Value})
		}
	}
	return fastLatencyFigure("upload-fast-p95", "/fast latency under slow uploads", 8*vg.Inch, rows,
		"/fast latency (actual start to last body byte, ok responses) per condition: p95 = nearest-rank 95th "+
			"percentile of a run, point = median over the condition's ok runs, line = min to max over them; p50 likewise "+
			"(median). Log scale. Direct sync workers reading slow uploads leave /fast waiting for a worker; request "+
			"buffering on keeps it at the no-upload level.")
}

// uploadTimesFigure draws, per condition, how long the clients took to
// send their bodies and how long the app spent reading them; nil when no
// upload ended ok.
func uploadTimesFigure(conds []recorder.UploadCondition) *figure {
	var rows []recorder.UploadCondition
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range conds {
		if c.SendS.Valid && c.AppReadS.Valid && c.SendS.Value > 0 && c.AppReadS.Value > 0 {
			rows = append(rows, c)
			lo = math.Min(lo, math.Min(c.SendS.Value, c.AppReadS.Value))
			hi = math.Max(hi, math.Max(c.SendS.Value, c.AppReadS.Value))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	f := &figure{name: "upload-times", title: "Client send time and app body-read time", width: 8 * vg.Inch, height: rowsHeight(len(rows))}
	p := newPlot(f.title, "seconds (log scale)", "condition")
	grid(p, true, false)
	labels := make([]string, len(rows))
	for i, c := range rows {
		labels[i] = uploadLabel(c)
	}
	ys := conditionRows(p, labels)
	for i, st := range []struct {
		name  string
		get   func(recorder.UploadCondition) float64
		shape draw.GlyphDrawer
	}{
		{"client send", func(c recorder.UploadCondition) float64 { return c.SendS.Value }, draw.TriangleGlyph{}},
		{"app body read", func(c recorder.UploadCondition) float64 { return c.AppReadS.Value }, draw.BoxGlyph{}},
	} {
		var xys plotter.XYs
		for j, c := range rows {
			xys = append(xys, plotter.XY{X: st.get(c), Y: ys[j]})
		}
		m := marks(xys, colorAt(i), st.shape)
		p.Add(m)
		p.Legend.Add(st.name, m)
		f.addSeries(st.name, len(m.XYs))
	}
	setLog(&p.X, lo, hi)
	p.X.Max = hi * 6
	f.panels = []*plot.Plot{p}
	f.caption = "Medians over the uploads that ended ok: the client's time from its request header to its last body " +
		"write returning, and the app's time in body reads as it reported it (Server-Timing body). Log scale. The app " +
		"reads as slowly as the client sends unless a proxy buffered the body first."
	return f
}
