package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
)

// conditionRows sets p's Y axis to one row per condition, the first at the
// top, and returns each condition's Y position.
func conditionRows(p *plot.Plot, labels []string) []float64 {
	n := len(labels)
	ys := make([]float64, n)
	names := make([]string, n)
	for i, l := range labels {
		ys[i] = float64(n - 1 - i)
		names[n-1-i] = l
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	return ys
}

// rowsHeight is the height of a figure with n condition rows.
func rowsHeight(n int) vg.Length {
	return max(3*vg.Inch, vg.Length(1.4+0.32*float64(n))*vg.Inch)
}

// p95Figure draws each condition's /fast p95: the median over its ok runs
// as a point, min to max as a line, on a log axis. It returns nil and the
// reason when no run has a p95 to draw.
func p95Figure(keys []condKey, groups map[condKey][]recorder.Run) (*figure, string) {
	type row struct {
		key          condKey
		mid, lo, hi  float64
		runs, values int
	}
	var rows []row
	var totals, runCounts []int
	var noP95 []string
	nonPositive := 0
	for _, k := range keys {
		var vals []float64
		for _, r := range groups[k] {
			totals = append(totals, r.FastTotal)
			switch {
			case !r.P95MS.Valid:
			case r.P95MS.Value <= 0:
				nonPositive++ // cannot be drawn on a log axis
			default:
				vals = append(vals, r.P95MS.Value)
			}
		}
		runCounts = append(runCounts, len(groups[k]))
		if len(vals) == 0 {
			noP95 = append(noP95, k.label())
			continue
		}
		rows = append(rows, row{k, recorder.Median(vals), slices.Min(vals), slices.Max(vals), len(groups[k]), len(vals)})
	}
	if len(rows) == 0 {
		return nil, "no ok run has a p95 above 0"
	}

	f := &figure{name: "fast-p95", title: "/fast p95 latency per condition", width: 8 * vg.Inch, height: rowsHeight(len(rows))}
	p := newPlot(f.title, "/fast p95 latency (ms, log scale)", "condition")
	grid(p, true, false)
	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = r.key.label()
	}
	ys := conditionRows(p, labels)

	// One series per route and server, so the routes stand apart by colour.
	type group struct {
		name           string
		y, mid, lo, hi []float64
		color          int
		first          int
	}
	var order []string
	byName := map[string]*group{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range rows {
		name := r.key.route + ", " + r.key.server
		g := byName[name]
		if g == nil {
			g = &group{name: name, color: len(order)}
			byName[name] = g
			order = append(order, name)
		}
		g.y, g.mid, g.lo, g.hi = append(g.y, ys[i]), append(g.mid, r.mid), append(g.lo, r.lo), append(g.hi, r.hi)
		lo, hi = math.Min(lo, r.lo), math.Max(hi, r.hi)
	}
	for _, name := range order {
		g := byName[name]
		c := colorAt(g.color)
		iv := newIntervals(g.y, g.mid, g.lo, g.hi)
		bars, err := plotter.NewXErrorBars(iv)
		if err != nil {
			return nil, err.Error()
		}
		bars.LineStyle.Color, bars.LineStyle.Width = c, vg.Points(1.5)
		bars.CapWidth = vg.Points(6)
		p.Add(bars, scatter(iv.XYs, c, vg.Points(4)))
		f.addSeries(name, len(g.y))
	}
	setLog(&p.X, lo, hi)
	f.panels = []*plot.Plot{p}

	fastN := countRange(totals)
	f.caption = fmt.Sprintf("p95 = nearest-rank 95th percentile of a run's %s /fast latencies "+
		"(actual start to last body byte; ok responses only, a failed request has no latency); "+
		"point = median over the condition's ok runs (%s per condition), line = min to max over those runs. "+
		"Log scale; colour groups route and server.", fastN, countRange(runCounts))
	if len(noP95) > 0 {
		f.caption += " Not drawn, no run with a p95: " + strings.Join(noP95, "; ") + "."
	}
	if nonPositive > 0 {
		f.caption += fmt.Sprintf(" %d run p95 values of 0 ms are not drawn (log scale).", nonPositive)
	}
	return f, ""
}

// sendReceiveFigure draws, per condition with slow downloads, the app's
// send time against the clients' receive time: bars for the medians over
// runs of each run's median, a point per download.
func sendReceiveFigure(keys []condKey, groups map[condKey][]recorder.Run, larges []recorder.LargeResponse) (*figure, string) {
	byRun := map[string][]recorder.LargeResponse{}
	for _, l := range larges {
		byRun[l.RunID] = append(byRun[l.RunID], l)
	}
	type row struct {
		key                condKey
		app, recv          float64 // medians over runs of the runs' medians
		appPoints, recvPts []float64
		incomplete         int
	}
	var rows []row
	for _, k := range keys {
		r := row{key: k}
		var appMed, recvMed []float64
		for _, run := range groups[k] {
			var app, recv []float64
			for _, l := range byRun[run.RunID] {
				if l.AppSendS.Valid {
					app = append(app, l.AppSendS.Value)
				}
				if !math.IsNaN(l.ReceiveS) {
					recv = append(recv, l.ReceiveS)
				}
				if !l.Complete || l.Error != "" {
					r.incomplete++
				}
			}
			appMed, recvMed = append(appMed, recorder.Median(app)), append(recvMed, recorder.Median(recv))
			r.appPoints, r.recvPts = append(r.appPoints, app...), append(r.recvPts, recv...)
		}
		if len(r.appPoints)+len(r.recvPts) == 0 {
			continue
		}
		r.app, r.recv = recorder.Median(appMed), recorder.Median(recvMed)
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, "no ok run has a slow download in large-responses.csv"
	}

	f := &figure{name: "send-vs-receive", title: "App send time vs client receive time of the slow downloads",
		width: 8 * vg.Inch, height: rowsHeight(len(rows))}
	p := newPlot(f.title, "time (s)", "condition")
	grid(p, true, false)
	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = r.key.label()
	}
	ys := conditionRows(p, labels)

	const offset, thickness, spread = 0.19, 0.34, 0.24
	var appPos, appVal, recvPos, recvVal []float64
	var appXY, recvXY plotter.XYs
	hi := 0.0
	incomplete := 0
	for i, r := range rows {
		appPos, appVal = append(appPos, ys[i]+offset), append(appVal, r.app)
		recvPos, recvVal = append(recvPos, ys[i]-offset), append(recvVal, r.recv)
		appXY = append(appXY, jitter(r.appPoints, ys[i]+offset, spread)...)
		recvXY = append(recvXY, jitter(r.recvPts, ys[i]-offset, spread)...)
		for _, v := range slices.Concat(r.appPoints, r.recvPts, []float64{r.app, r.recv}) {
			if !math.IsNaN(v) {
				hi = math.Max(hi, v)
			}
		}
		incomplete += r.incomplete
	}
	appColor, recvColor := colorAt(1), colorAt(0)
	appBars := newBars(appPos, appVal, thickness, true, appColor)
	recvBars := newBars(recvPos, recvVal, thickness, true, recvColor)
	appDots := scatter(appXY, appColor, vg.Points(2.2))
	recvDots := scatter(recvXY, recvColor, vg.Points(2.2))
	p.Add(appBars, recvBars, appDots, recvDots)
	f.addSeries("app_send_s median", appBars.drawn())
	f.addSeries("client_receive_s median", recvBars.drawn())
	f.addSeries("app_send_s per download", len(appDots.XYs))
	f.addSeries("receive_s per download", len(recvDots.XYs))
	p.Legend.Add("app_send_s (bar: median)", appBars)
	p.Legend.Add("client_receive_s (bar: median)", recvBars)
	p.Legend.Add("app_send_s, one download", appDots)
	p.Legend.Add("receive_s, one download", recvDots)
	// Room on the right for the legend.
	p.X.Min, p.X.Max = 0, math.Max(hi, 1e-3)*1.55
	f.panels = []*plot.Plot{p}

	f.caption = "app_send_s = the app's time from starting the response generator to having written the " +
		"last chunk to the socket (not delivery); client_receive_s = a slow client's time from sending the " +
		"request to consuming the last chunk under its read pacing. Bar = median over the condition's ok runs " +
		"of each run's median download (as in conditions.csv); point = one download of those runs."
	if missing := len(recvXY) - len(appXY); missing > 0 {
		f.caption += fmt.Sprintf(" %d downloads have no app_send_s (the app did not report it).", missing)
	}
	if incomplete > 0 {
		f.caption += fmt.Sprintf(" %d downloads did not complete (error or short body); their times are drawn as measured.", incomplete)
	}
	return f, ""
}

// jitter places values at y, spread evenly over a band of the given
// width so that equal values stay visible; NaN values are left out.
func jitter(values []float64, y, width float64) plotter.XYs {
	var xys plotter.XYs
	var vs []float64
	for _, v := range values {
		if !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	for i, v := range vs {
		dy := 0.0
		if len(vs) > 1 {
			dy = (float64(i)/float64(len(vs)-1) - 0.5) * width
		}
		xys = append(xys, plotter.XY{X: v, Y: y + dy})
	}
	return xys
}
