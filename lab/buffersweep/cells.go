package buffersweep

import (
	"slices"

	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/recorder"
)

// download is what one slow download of a cell measured.
type download struct {
	route    string
	appSendS recorder.Maybe
	receiveS float64
	capacity recorder.Maybe // most bytes in flight, from the hop samples
	step     recorder.Maybe // the app's wake-up step, from the hop samples
}

// path is what the hop samples say of one download's path.
type path struct {
	capacity int64 // the most bytes in flight: app_written - client_read
	step     int64 // the most the app wrote between two samples once the path was full
}

// paths returns, per run and download, its path from the samples in
// which app_written was known (rows in time order per download, as Hops
// writes them).
func paths(rows []recorder.Hop) map[string]map[int]path {
	type key struct {
		run string
		d   int
		t   float64
	}
	written := map[key]int64{}
	for _, r := range rows {
		if r.Hop == recorder.HopAppWritten && r.Source != recorder.HopSourceMissing {
			written[key{r.RunID, r.Download, r.TS}] = r.Bytes
		}
	}
	type dl struct {
		run string
		d   int
	}
	type series struct{ w, inFlight []int64 }
	byDownload := map[dl]*series{}
	for _, r := range rows {
		w, ok := written[key{r.RunID, r.Download, r.TS}]
		if r.Hop != recorder.HopClientRead || !ok {
			continue
		}
		s := byDownload[dl{r.RunID, r.Download}]
		if s == nil {
			s = &series{}
			byDownload[dl{r.RunID, r.Download}] = s
		}
		s.w, s.inFlight = append(s.w, w), append(s.inFlight, w-r.Bytes)
	}
	out := map[string]map[int]path{}
	for k, s := range byDownload {
		p := path{capacity: max(0, slices.Max(s.inFlight))}
		// The path is full from the first sample within 90% of the peak.
		full := slices.IndexFunc(s.inFlight, func(f int64) bool { return f >= p.capacity*9/10 })
		for i := full + 1; full >= 0 && i < len(s.w); i++ {
			p.step = max(p.step, s.w[i]-s.w[i-1])
		}
		if out[k.run] == nil {
			out[k.run] = map[int]path{}
		}
		out[k.run][k.d] = p
	}
	return out
}

// downloads reads a cell's results directory: every complete download of
// every completed run, with its measured capacity and wake-up step.
func downloads(dir string) ([]download, error) {
	hopRows, _, err := recorder.ReadOptional[recorder.Hop](dir)
	if err != nil {
		return nil, err
	}
	larges, _, err := recorder.ReadOptional[recorder.LargeResponse](dir)
	if err != nil {
		return nil, err
	}
	runs, _, err := recorder.ReadOptional[recorder.Run](dir)
	if err != nil {
		return nil, err
	}
	ok := map[string]bool{}
	for _, r := range runs {
		ok[r.RunID] = r.Status == recorder.RunOK
	}
	ps := paths(hopRows)
	var out []download
	for _, l := range larges {
		if !ok[l.RunID] || l.Outcome != recorder.DownloadComplete {
			continue
		}
		d := download{route: l.Route, appSendS: l.AppSendS, receiveS: l.ReceiveS}
		if p, found := ps[l.RunID][l.Client]; found {
			d.capacity, d.step = recorder.Some(float64(p.capacity)), recorder.Some(float64(p.step))
		}
		out = append(out, d)
	}
	return out, nil
}

// median of the valid values, none when there are none.
func median(vs []recorder.Maybe) recorder.Maybe {
	var f []float64
	for _, v := range vs {
		f = recorder.AppendValid(f, v)
	}
	return recorder.Some(recorder.Median(f))
}

// summarize fills a cell's measured columns from its downloads of route.
func summarize(cell *Cell, ds []download) {
	var sends, recv, caps, steps []recorder.Maybe
	for _, d := range ds {
		if d.route != cell.Route {
			continue
		}
		sends = append(sends, d.appSendS)
		recv = append(recv, recorder.Some(d.receiveS))
		caps = append(caps, d.capacity)
		steps = append(steps, d.step)
	}
	cell.AppSendS, cell.ClientReceiveS = median(sends), median(recv)
	cell.CapacityBytes, cell.WakeStepBytes = whole(median(caps)), whole(median(steps))
	cell.CapacityMeasuredBytes, cell.AppSendMeasuredS = cell.CapacityBytes, cell.AppSendS
}

// predict fills a cell's predicted columns from the model's capacity of
// its path, and the measured send time's error against the prediction.
func predict(cell *Cell, p pathmodel.Capacity) {
	c := p.Total()
	cell.CapacityPredictedBytes = recorder.Some(float64(c))
	cell.AppSendPredictedS = recorder.Some(pathmodel.AppSend(cell.SizeBytes, cell.RateBps, c))
	cell.PredictedAppSendS = cell.AppSendPredictedS
	cell.PredictionErrorPct = errorPct(cell.AppSendMeasuredS, cell.AppSendPredictedS)
}

// whole rounds a byte count down to a whole byte.
func whole(m recorder.Maybe) recorder.Maybe {
	if m.Valid {
		m.Value = float64(int64(m.Value))
	}
	return m
}
