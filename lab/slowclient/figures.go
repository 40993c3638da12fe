package slowclient

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// p95Row is one condition of the p95 figure: the median, min and max
// over its ok runs of each run's /fast p95.
type p95Row struct {
	key         condKey
	mid, lo, hi float64
}

// p95Figure draws each condition's /fast p95: the median over its ok runs
// as a point, min to max as a line, on a log axis. It returns nil and the
// reason when no run has a p95 to draw.
func p95Figure(keys []condKey, groups map[condKey][]recorder.Run) (*report.Drawing, string) {
	var rows []p95Row
	var totals, runCounts []int // ok /fast requests (the latencies ranked) of each ok run; ok runs of each condition
	var noP95 []string          // conditions without a run p95, not drawn
	nonPositive := 0            // run p95 values <= 0, which a log axis cannot show
	for _, k := range keys {
		var vals []float64
		for _, r := range groups[k] {
			totals = append(totals, r.FastOK)
			switch {
			case !r.P95MS.Valid:
			case r.P95MS.Value <= 0:
				nonPositive++
			default:
				vals = append(vals, r.P95MS.Value)
			}
		}
		runCounts = append(runCounts, len(groups[k]))
		if len(vals) == 0 {
			noP95 = append(noP95, k.label())
			continue
		}
		rows = append(rows, p95Row{k, recorder.Median(vals), slices.Min(vals), slices.Max(vals)})
	}
	if len(rows) == 0 {
		return nil, "no ok run has a p95 above 0"
	}
	f := report.NewDrawing("fast-p95", "/fast p95 latency per condition", 8*vg.Inch, report.RowsHeight(len(rows)))
	p := report.NewPlot(f.Title(), "/fast p95 latency (ms, log scale)", "condition")
	report.Grid(p, true, false)
	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = r.key.label()
	}
	ys := report.ConditionRows(p, labels)
	if err := drawP95(p, f, rows, ys); err != nil {
		return nil, err.Error()
	}
	f.AddPanel(p)
	caption := fmt.Sprintf("p95 = nearest-rank 95th percentile of a run's %s /fast latencies "+
		"(actual start to last body byte; ok responses only, a failed request has no latency); "+
		"point = median over the condition's ok runs (%s per condition), line = min to max over those runs. "+
		"Log scale; colour groups route and server.", countRange(totals), countRange(runCounts))
	if len(noP95) > 0 {
		caption += " Not drawn, no run with a p95: " + strings.Join(noP95, "; ") + "."
	}
	if nonPositive > 0 {
		caption += fmt.Sprintf(" %d run p95 values of 0 ms are not drawn (log scale).", nonPositive)
	}
	f.SetCaption(caption)
	return f, ""
}

// drawP95 adds the rows at ys to p as one series per route and server,
// so the routes stand apart by colour, and sets p's log axis.
func drawP95(p *plot.Plot, f *report.Drawing, rows []p95Row, ys []float64) error {
	type group struct{ y, mid, lo, hi []float64 }
	var order []string // the colours' order
	byName := map[string]*group{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range rows {
		name := r.key.route + ", " + r.key.server
		g := byName[name]
		if g == nil {
			g = &group{}
			byName[name] = g
			order = append(order, name)
		}
		g.y, g.mid, g.lo, g.hi = append(g.y, ys[i]), append(g.mid, r.mid), append(g.lo, r.lo), append(g.hi, r.hi)
		lo, hi = math.Min(lo, r.lo), math.Max(hi, r.hi)
	}
	for i, name := range order {
		g := byName[name]
		bars, points, err := report.Ranges(g.y, g.mid, g.lo, g.hi, report.ColorAt(i))
		if err != nil {
			return err
		}
		p.Add(bars, points)
		f.AddSeries(name, len(g.y))
	}
	report.SetLog(&p.X, lo, hi)
	return nil
}

// countRange describes how many of something each item had: "72" when
// all had the same, else "70 to 72".
func countRange(counts []int) string {
	if len(counts) == 0 {
		return "0"
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// sendReceiveRow is one condition of the send-vs-receive figure.
type sendReceiveRow struct {
	key                condKey
	app, recv          float64 // medians over runs of the runs' medians
	appPoints, recvPts []float64
	incomplete         int
}

// sendReceiveFigure draws, per condition with slow downloads in its ok
// runs, the app's send time against the clients' receive time: bars for
// the medians over runs of each run's median, a point per download.
func sendReceiveFigure(keys []condKey, groups map[condKey][]recorder.Run, larges []recorder.LargeResponse) (*report.Drawing, string) {
	byRun := map[string][]recorder.LargeResponse{}
	for _, l := range larges {
		byRun[l.RunID] = append(byRun[l.RunID], l)
	}
	var rows []sendReceiveRow
	incomplete := 0
	for _, k := range keys {
		r := sendReceiveRow{key: k}
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
			continue // no download to draw
		}
		r.app, r.recv = recorder.Median(appMed), recorder.Median(recvMed)
		rows = append(rows, r)
		incomplete += r.incomplete
	}
	if len(rows) == 0 {
		return nil, "no ok run has a slow download in large-responses.csv"
	}
	f := report.NewDrawing("send-vs-receive", "App send time vs client receive time of the slow downloads",
		8*vg.Inch, report.RowsHeight(len(rows)))
	p := report.NewPlot(f.Title(), "time (s)", "condition")
	report.Grid(p, true, false)
	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = r.key.label()
	}
	ys := report.ConditionRows(p, labels)
	noAppSend := drawSendReceive(p, f, rows, ys)
	f.AddPanel(p)
	caption := "app_send_s = the app's time from starting the response generator to having written the " +
		"last chunk to the socket (not delivery); client_receive_s = a slow client's time from sending the " +
		"request to consuming the last chunk under its read pacing. Bar = median over the condition's ok runs " +
		"of each run's median download (as in conditions.csv); point = one download of those runs."
	if noAppSend > 0 {
		caption += fmt.Sprintf(" %d downloads have no app_send_s (the app did not report it).", noAppSend)
	}
	if incomplete > 0 {
		caption += fmt.Sprintf(" %d downloads did not complete (error or short body); their times are drawn as measured.", incomplete)
	}
	f.SetCaption(caption)
	return f, ""
}

// drawSendReceive adds the rows at ys to p: a bar for each median, app
// above and client below the row's line, and a point per download. It
// returns how many downloads have a receive time but no app send time.
func drawSendReceive(p *plot.Plot, f *report.Drawing, rows []sendReceiveRow, ys []float64) (noAppSend int) {
	const offset, thickness, spread = 0.19, 0.34, 0.24
	var appPos, appVal, recvPos, recvVal []float64
	var appXY, recvXY plotter.XYs
	hi := 0.0
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
	}
	appColor, recvColor := report.ColorAt(1), report.ColorAt(0)
	appBars := report.NewBars(appPos, appVal, thickness, true, appColor)
	recvBars := report.NewBars(recvPos, recvVal, thickness, true, recvColor)
	appDots := report.Scatter(appXY, appColor, vg.Points(2.2))
	recvDots := report.Scatter(recvXY, recvColor, vg.Points(2.2))
	p.Add(appBars, recvBars, appDots, recvDots)
	f.AddSeries("app_send_s median", appBars.Drawn())
	f.AddSeries("client_receive_s median", recvBars.Drawn())
	f.AddSeries("app_send_s per download", len(appDots.XYs))
	f.AddSeries("receive_s per download", len(recvDots.XYs))
	p.Legend.Add("app_send_s (bar: median)", appBars)
	p.Legend.Add("client_receive_s (bar: median)", recvBars)
	p.Legend.Add("app_send_s, one download", appDots)
	p.Legend.Add("receive_s, one download", recvDots)
	// Room on the right for the legend.
	p.X.Min, p.X.Max = 0, math.Max(hi, 1e-3)*1.55
	return len(recvXY) - len(appXY)
}

// jitter places values at y, spread evenly over a band of the given
// width so that equal values stay visible; NaN values are left out.
func jitter(values []float64, y, width float64) plotter.XYs {
	var xys plotter.XYs
	vs := slices.DeleteFunc(slices.Clone(values), math.IsNaN)
	for i, v := range vs {
		dy := 0.0
		if len(vs) > 1 {
			dy = (float64(i)/float64(len(vs)-1) - 0.5) * width
		}
		xys = append(xys, plotter.XY{X: v, Y: y + dy})
	}
	return xys
}
