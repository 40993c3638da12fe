package loadgen

import (
	"maps"
	"slices"
)

// Figures are a Summary's figures: what Print writes, and what `slowlab
// loadgen --json` encodes, from this one struct. Latencies and lags are in
// ms (nearest-rank percentiles of the summary's bounded histograms); a
// figure that has no value (no ok request, none started) is nil.
type Figures struct {
	Requests int `json:"requests"`
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
	NotSent  int `json:"not_sent"`
	// Status counts the responses by status code, in code order; Errors
	// the failed requests by ErrorReason, most frequent first, each with
	// the text of its first error.
	Status []StatusCount `json:"status"`
	Errors []ErrorCount  `json:"errors"`
	// LatencyMS is over the ok requests, ScheduleLagMS over those started.
	LatencyMS     *LatencyFigures `json:"latency_ms"`
	ScheduleLagMS *LagFigures     `json:"schedule_lag_ms"`
	// Started, Late (started more than LateAfterMS behind schedule) and
	// Skipped (never started: OpenLoop.MaxLag); OnSchedulePct is the share
	// of the started ones that were not late, StartedPerS the rate at which
	// they started (nil for fewer than two, or all at one instant).
	Started       int      `json:"started"`
	Late          int      `json:"late"`
	Skipped       int      `json:"skipped"`
	LateAfterMS   float64  `json:"late_after_ms"`
	OnSchedulePct *float64 `json:"on_schedule_pct"`
	StartedPerS   *float64 `json:"started_per_s"`
}

// StatusCount is how many responses had one status code.
type StatusCount struct {
	Code  int `json:"code"`
	Count int `json:"count"`
}

// ErrorCount is how many requests failed for one reason, and the text of
// the first.
type ErrorCount struct {
	Reason  string `json:"reason"`
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// LatencyFigures are the ok requests' latency percentiles, in ms.
type LatencyFigures struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// LagFigures are the started requests' schedule lag percentiles, in ms.
type LagFigures struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Figures returns s's figures.
func (s Summary) Figures() Figures {
	f := Figures{Requests: s.Total, OK: s.OK, Failed: s.Failed, NotSent: s.NotSent, Status: []StatusCount{}, Errors: []ErrorCount{},
		Started: s.lag.N(), Late: s.Late, Skipped: s.Skipped, LateAfterMS: float64(LateAfter.Microseconds()) / 1000}
	for _, code := range slices.Sorted(maps.Keys(s.codes)) {
		f.Status = append(f.Status, StatusCount{code, s.codes[code]})
	}
	for _, reason := range s.sortedReasons() {
		f.Errors = append(f.Errors, ErrorCount{reason, s.reasons[reason], s.example[reason]})
	}
	if s.lat.N() > 0 {
		f.LatencyMS = &LatencyFigures{s.lat.Percentile(50), s.lat.Percentile(95), s.lat.Percentile(99), s.lat.Percentile(100)}
	}
	if f.Started > 0 {
		f.ScheduleLagMS = &LagFigures{s.lag.Percentile(50), s.lag.Percentile(99), s.lag.Percentile(100)}
		pct := 100 * float64(f.Started-s.Late) / float64(f.Started)
		f.OnSchedulePct = &pct
		if span := s.last.Sub(s.first); f.Started > 1 && span > 0 {
			rate := float64(f.Started-1) / span.Seconds()
			f.StartedPerS = &rate
		}
	}
	return f
}

// DownloadFigure is one slow reader's download, as PrintDownloads writes it
// and `slowlab loadgen --json` encodes it.
type DownloadFigure struct {
	Client   int     `json:"client"`
	Status   int     `json:"status"`
	Bytes    int64   `json:"bytes"`
	ReceiveS float64 `json:"receive_s"`
	Complete bool    `json:"complete"`
	Error    string  `json:"error,omitempty"` // why it is incomplete
}

// DownloadFigures are the downloads' figures, in their order.
func DownloadFigures(downloads []Download) []DownloadFigure {
	out := make([]DownloadFigure, 0, len(downloads))
	for _, d := range downloads {
		r := DownloadFigure{Client: d.Client, Status: d.Status, Bytes: d.Bytes, ReceiveS: d.Receive.Seconds(), Complete: d.Complete}
		if !d.Complete {
			r.Error = "<nil>"
			if d.Err != nil {
				r.Error = d.Err.Error()
			}
		}
		out = append(out, r)
	}
	return out
}
