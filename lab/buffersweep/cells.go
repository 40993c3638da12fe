package buffersweep

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/slowlab/slowlab/recorder"
)

// download is what one slow download of a cell measured.
type download struct {
	route     string
	appSendS  recorder.Maybe
	receiveS  float64
	capacity  recorder.Maybe // most bytes in flight, from the hop samples
	predicted recorder.Maybe // max(0, size - capacity) / rate
}

// capacities returns, per run and download, the most bytes it had in
// flight between the app and the client: app_written - client_read over
// the samples in which app_written was known.
func capacities(rows []recorder.Hop) map[string]map[int]int64 {
	out := map[string]map[int]int64{}
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
	for _, r := range rows {
		if r.Hop != recorder.HopClientRead {
			continue
		}
		w, ok := written[key{r.RunID, r.Download, r.TS}]
		if !ok {
			continue
		}
		if out[r.RunID] == nil {
			out[r.RunID] = map[int]int64{}
		}
		out[r.RunID][r.Download] = max(out[r.RunID][r.Download], w-r.Bytes)
	}
	return out
}

// downloads reads a cell's results directory: every complete download of
// every completed run, with its capacity and prediction.
func downloads(dir string, size, rate int64) ([]download, error) {
	hopRows, err := recorder.ReadFile[recorder.Hop](filepath.Join(dir, recorder.FileName[recorder.Hop]()))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, recorder.FileName[recorder.LargeResponse]()))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, recorder.FileName[recorder.Run]()))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ok := map[string]bool{}
	for _, r := range runs {
		ok[r.RunID] = r.Status == recorder.RunOK
	}
	caps := capacities(hopRows)
	var out []download
	for _, l := range larges {
		if !ok[l.RunID] || l.Outcome != recorder.DownloadComplete {
			continue
		}
		d := download{route: l.Route, appSendS: l.AppSendS, receiveS: l.ReceiveS}
		if c, found := caps[l.RunID][l.Client]; found {
			d.capacity = recorder.Some(float64(c))
			d.predicted = recorder.Some(float64(max(0, size-c)) / float64(rate))
		}
		out = append(out, d)
	}
	return out, nil
}

// median of the valid values, none when there are none.
func median(vs []recorder.Maybe) recorder.Maybe {
	var f []float64
	for _, v := range vs {
		if v.Valid {
			f = append(f, v.Value)
		}
	}
	if len(f) == 0 {
		return recorder.None()
	}
	return recorder.Some(recorder.Median(f))
}

// summarize fills a cell's measured columns from its downloads of route.
func summarize(cell *recorder.SweepCell, ds []download) {
	var sends, recv, caps, preds []recorder.Maybe
	for _, d := range ds {
		if d.route != cell.Route {
			continue
		}
		sends = append(sends, d.appSendS)
		recv = append(recv, recorder.Some(d.receiveS))
		caps = append(caps, d.capacity)
		preds = append(preds, d.predicted)
	}
	cell.AppSendS, cell.ClientReceiveS = median(sends), median(recv)
	cell.CapacityBytes, cell.PredictedAppSendS = median(caps), median(preds)
	if cell.CapacityBytes.Valid {
		cell.CapacityBytes = recorder.Some(float64(int64(cell.CapacityBytes.Value)))
	}
	if p, o := cell.PredictedAppSendS, cell.AppSendS; p.Valid && o.Valid && p.Value > 0 {
		cell.PredictionErrorPct = recorder.Some((o.Value - p.Value) / p.Value * 100)
	}
}
