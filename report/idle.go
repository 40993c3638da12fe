package report

import (
	"fmt"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
)

// The idle-connections results files: the run summaries mark the
// directory.
var (
	idleRunsFile  = recorder.FileName[recorder.IdleRun]()
	idleConnsFile = recorder.FileName[recorder.IdleConn]()
)

// IdleConnections is the idle-connections section, which idle-connections's registration in lab carries.
var IdleConnections = Section{Name: "idle-connections", Marker: idleRunsFile, build: buildIdle}

func idleLabel(r recorder.IdleRun) string {
	return fmt.Sprintf("%s, %s, %d %s", r.Route, r.Server, r.Conns, r.Mode)
}

func buildIdle(dir string) (*section, error) {
	runs, err := recorder.ReadFile[recorder.IdleRun](filepath.Join(dir, idleRunsFile))
	if err != nil {
		return nil, err
	}
	s := &section{id: "idle-connections", title: "idle-connections",
		intro: "K connections that connect and send nothing (idle) or send a request header a byte a second and never " +
			"finish it (slowloris), held against each server model directly and behind the proxy at its defaults, while " +
			"/fast runs open loop. A sync worker that accepts such a connection is held until the server's timeout ends " +
			"it (Gunicorn's --timeout kills the worker); a proxy holds them itself until its client_header_timeout and " +
			"never passes them to the app. Each connection is closed by its holder at the run's bound if the server " +
			"has not closed it."}
	if f := idleFigure(runs); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Held-time figure left out: no ok run in %s had a connection the server closed or a /fast p95.", idleRunsFile)
	}
	t := &table{Caption: "idle-connections runs (" + idleRunsFile + "; every connection in " + idleConnsFile + "): how the " +
		"held connections ended (fin or reset: the server closed them; bound: still open when the holder closed them), the " +
		"median and largest time the server held one it closed, counted from the connect (a connection waiting in the " +
		"accept queue is held too), /fast ok of sent and its p95 (nearest rank), the app's and proxy's memory peaks " +
		"(cgroup usage; RSS of their processes) and their peak open file descriptors and established connections.",
		Head: []string{"route", "server", "mode", "K", "status", "connected", "fin", "reset", "bound", "responded", "closed median (s)",
			"closed max (s)", "bound (s)", "app timeout (s)", "header timeout (s)", "/fast ok", "/fast p95 (ms)", "app mem (MiB)",
			"app RSS (MiB)", "proxy mem (MiB)", "proxy RSS (MiB)", "app fds", "app established", "proxy fds", "proxy established"}}
	for _, r := range runs {
		t.Rows = append(t.Rows, []Cell{Text(r.Route), Text(r.Server), Text(r.Mode), Int(r.Conns), {Text: r.Status, Title: r.Reason},
			Int(r.Connected), Int(r.FIN), Int(r.Reset), Int(r.Bound), Int(r.Responded),
			Opt(r.ServerClosedP50S, seconds), Opt(r.ServerClosedMaxS, seconds), seconds(r.BoundS),
			Opt(r.AppTimeoutS, seconds), Opt(r.HeaderTimeoutS, seconds),
			{Text: fmt.Sprintf("%d/%d", r.FastOK, r.FastSent), Num: true}, Opt(r.FastP95MS, Sig),
			Opt(r.AppMemMiB, mib), Opt(r.AppRSSMiB, mib), Opt(r.ProxyMemMiB, mib), Opt(r.ProxyRSSMiB, mib),
			Opt(r.AppFDs, whole), Opt(r.AppEstablished, whole), Opt(r.ProxyFDs, whole), Opt(r.ProxyEstablished, whole)})
	}
	s.addTable(t)
	return s, nil
}

// idleFigure draws, per ok run, how long the server held the connections
// it closed (median) and /fast's p95, both in seconds: where a worker is
// held, /fast waits as long.
func idleFigure(runs []recorder.IdleRun) *figure {
	var ok []recorder.IdleRun
	for _, r := range runs {
		if r.Status == recorder.RunOK && (r.ServerClosedP50S.Valid || r.FastP95MS.Valid) {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	f := &figure{name: "idle-held", title: "How long the server held idle connections, and /fast p95 meanwhile",
		width: 9 * vg.Inch, height: 5 * vg.Inch}
	p := newPlot(f.title, "route, server, K and mode", "seconds")
	grid(p, false, true)
	names := make([]string, len(ok))
	for i, r := range ok {
		route := r.Route
		if route != "direct" {
			route = "proxy" // the proxy at its defaults: the full route name is in the table
		}
		names[i] = fmt.Sprintf("%s\n%s\n%d %s", route, r.Server, r.Conns, r.Mode)
	}
	p.NominalX(names...)
	stats := []struct {
		name string
		get  func(recorder.IdleRun) recorder.Maybe
	}{
		{"held until the server closed it (median)", func(r recorder.IdleRun) recorder.Maybe { return r.ServerClosedP50S }},
		{"/fast p95", func(r recorder.IdleRun) recorder.Maybe {
			if !r.FastP95MS.Valid {
				return r.FastP95MS
			}
			return recorder.Some(r.FastP95MS.Value / 1000)
		}},
	}
	const width = 0.38
	hi := 0.0
	for i, st := range stats {
		pos := make([]float64, len(ok))
		val := make([]float64, len(ok))
		for j, r := range ok {
			pos[j] = float64(j) + (float64(i)-0.5)*width
			val[j] = math.NaN()
			if m := st.get(r); m.Valid {
				val[j] = m.Value
				hi = math.Max(hi, m.Value)
			}
		}
		b := newBars(pos, val, width*0.9, false, colorAt(i))
		p.Add(b)
		p.Legend.Add(st.name, b)
		f.addSeries(st.name, b.drawn())
	}
	if hi == 0 {
		return nil
	}
	p.X.Min, p.X.Max = -0.6, float64(len(ok))-0.4
	p.Y.Min, p.Y.Max = 0, hi*1.3
	p.Legend.Left = true
	f.panels = []*plot.Plot{p}
	f.caption = "Per ok run of " + idleRunsFile + ": the median time the server held a held connection it closed " +
		"(from the connect; no bar: it closed none, every one lasted to the holder's bound), and the p95 of the /fast " +
		"requests sent meanwhile (nearest rank, in seconds)."
	return f
}

// whole is a count measured as a float.
func whole(v float64) Cell { return Fixed(v, 0) }
