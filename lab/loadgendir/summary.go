package loadgendir

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// results is a loadgen directory as the section reads it: its record,
// what its requests sum to (read row by row: a merged load's rows are not
// all held), and its slow readers.
type results struct {
	rec Record
	// Counts as `slowlab loadgen`'s summary keeps them (loadgen.Summary),
	// from requests.csv.
	total, sent, ok, failed, notSent, skipped, late int
	status                                          map[int]int
	errors                                          map[string]int // failed requests by reason (errorReason)
	// ok and failed requests as the figure draws them: their start (s
	// since the schedule's start) and latency (ms); lags of the started.
	okAt, okMS, failedAt, failedMS []float64
	lags                           []float64
	larges                         []recorder.LargeResponse
	largesPresent                  bool
}

func readResults(dir string) (*results, error) {
	rec, err := Read(dir)
	if err != nil {
		return nil, err
	}
	d := &results{rec: rec, status: map[int]int{}, errors: map[string]int{}}
	err = recorder.EachRow(filepath.Join(dir, recorder.FileName[recorder.Request]()), func(r recorder.Request) error { d.add(r); return nil })
	if err != nil {
		return nil, err
	}
	if d.larges, d.largesPresent, err = recorder.ReadOptional[recorder.LargeResponse](dir); err != nil {
		return nil, err
	}
	return d, nil
}

// add counts one request as loadgen.Summary.Add does its result.
func (d *results) add(r recorder.Request) {
	d.total++
	if r.NotSent() {
		d.notSent++
		return
	}
	d.sent++
	started := !math.IsNaN(r.StartS)
	if !started {
		d.skipped++
	} else if !math.IsNaN(r.ScheduleLagMS) {
		d.lags = append(d.lags, r.ScheduleLagMS)
		if r.ScheduleLagMS > float64(loadgen.LateAfter.Microseconds())/1000 {
			d.late++
		}
	}
	if r.Status > 0 {
		d.status[r.Status]++
	}
	if recorder.OKRequest(r) && !math.IsNaN(r.LatencyMS) {
		d.ok++
		d.okAt, d.okMS = append(d.okAt, r.StartS), append(d.okMS, r.LatencyMS)
		return
	}
	d.failed++
	if r.Error != "" {
		d.errors[errorReason(r.Error)]++
	}
	if started && r.LatencyMS > 0 {
		d.failedAt, d.failedMS = append(d.failedAt, r.StartS), append(d.failedMS, r.LatencyMS)
	}
}

// errorReason is the cause an error column ends with ("Get URL: dial
// tcp ...: connect: connection refused" is "connection refused"): the
// part that does not name the request's own addresses.
func errorReason(text string) string {
	if i := strings.LastIndex(text, ": "); i >= 0 {
		text = text[i+2:]
	}
	return strings.TrimSpace(text)
}

// row is one figure of the summary table.
type row struct {
	Figure, Value string
	Num           bool
}

// summaryRows are the run's figures as `slowlab loadgen` prints its
// summary, computed from the rows (exact nearest-rank percentiles).
func (d *results) summaryRows() []row {
	rows := []row{
		{"requests", fmt.Sprintf("%d: ok %d, failed %d, not sent %d", d.total, d.ok, d.failed, d.notSent), false},
		{"planned", fmt.Sprint(d.rec.Planned), true},
	}
	for _, code := range slices.Sorted(maps.Keys(d.status)) {
		rows = append(rows, row{fmt.Sprintf("status %d", code), fmt.Sprint(d.status[code]), true})
	}
	if len(d.status) == 0 {
		rows = append(rows, row{"status", "no response", false})
	}
	reasons := slices.SortedFunc(maps.Keys(d.errors), func(a, b string) int {
		return cmp.Or(cmp.Compare(d.errors[b], d.errors[a]), strings.Compare(a, b))
	})
	for _, reason := range reasons {
		rows = append(rows, row{"error: " + reason, fmt.Sprint(d.errors[reason]), true})
	}
	if len(reasons) == 0 {
		rows = append(rows, row{"errors", "none", false})
	}
	rows = append(rows, row{"latency ms (ok requests)", percentiles(d.okMS, []float64{50, 95, 99, 100}, 2), false},
		row{"schedule lag ms (started)", percentiles(d.lags, []float64{50, 99, 100}, 3), false})
	onSchedule := fmt.Sprintf("- (late 0 of 0 started, skipped %d)", d.skipped)
	if n := len(d.lags); n > 0 {
		onSchedule = fmt.Sprintf("%.2f%% started within %v (late %d of %d started, skipped %d)",
			100*float64(n-d.late)/float64(n), loadgen.LateAfter, d.late, n, d.skipped)
	}
	rows = append(rows, row{"on schedule", onSchedule, false})
	if d.largesPresent {
		complete := 0
		for _, l := range d.larges {
			if l.Outcome == recorder.DownloadComplete {
				complete++
			}
		}
		rows = append(rows, row{"slow readers", fmt.Sprintf("%d: %d complete", len(d.larges), complete), false})
	}
	return rows
}

// percentiles writes the nearest-rank percentiles ps of vs ("p50 1.23
// p95 ..."; the 100th is max), or "-" for none.
func percentiles(vs []float64, ps []float64, decimals int) string {
	if len(vs) == 0 {
		return "-"
	}
	var parts []string
	for _, p := range ps {
		name := fmt.Sprintf("p%g", p)
		if p == 100 {
			name = "max"
		}
		parts = append(parts, fmt.Sprintf("%s %.*f", name, decimals, recorder.NearestRank(vs, p)))
	}
	return strings.Join(parts, "  ")
}
