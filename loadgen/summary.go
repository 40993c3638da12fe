package loadgen

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Summary is what `slowlab loadgen` says about its open-loop requests:
// counts, status codes, error reasons with an example each, and the
// latencies and schedule lags. Its memory does not grow with the number of
// requests (the percentiles come from bounded histograms), so a run can
// stream its results into one with Add instead of keeping them.
type Summary struct {
	Total, OK, Failed, NotSent int
	// Late counts the requests that started more than LateAfter after
	// they were due; Skipped those never started because they could not
	// start within OpenLoop.MaxLag (also counted in Failed, reason late).
	Late, Skipped int
	codes         map[int]int    // responses by status code
	reasons       map[string]int // failed requests by ErrorReason
	example       map[string]string
	lat, lag      durationHist // latency of ok requests, lag of started ones
	first, last   time.Time    // the first and last start
}

// LateAfter is the schedule lag beyond which a started request counts as
// late in the Summary: the issue-21 goal of starting within 1 ms.
const LateAfter = time.Millisecond

// NewSummary returns an empty Summary to Add results to.
func NewSummary() *Summary {
	return &Summary{codes: map[int]int{}, reasons: map[string]int{}, example: map[string]string{}}
}

// Add counts one more result.
func (s *Summary) Add(r Result) {
	s.Total++
	if r.NotSent {
		s.NotSent++
		return
	}
	if r.Skipped {
		s.Skipped++
	} else {
		s.lag.Add(r.ScheduleLag)
		if r.ScheduleLag > LateAfter {
			s.Late++
		}
		if s.first.IsZero() || r.Start.Before(s.first) {
			s.first = r.Start
		}
		if r.Start.After(s.last) {
			s.last = r.Start
		}
	}
	if r.Status > 0 {
		s.codes[r.Status]++
	}
	if r.Err == nil && r.Status >= 200 && r.Status < 400 {
		s.OK++
		s.lat.Add(r.Latency)
		return
	}
	s.Failed++
	if r.Err != nil {
		reason := ErrorReason(r.Err)
		if s.reasons[reason] == 0 {
			s.example[reason] = errorText(r.Err)
		}
		s.reasons[reason]++
	}
}

// errorText is err without the "Get URL: " that every client error starts
// with: the URL is the same for all and the cause is what matters.
func errorText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// sortedReasons returns the error reasons, most frequent first.
func (s Summary) sortedReasons() []string {
	reasons := slices.Collect(maps.Keys(s.reasons))
	slices.SortFunc(reasons, func(a, b string) int {
		if c := cmp.Compare(s.reasons[b], s.reasons[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return reasons
}

// cause says why no request succeeded: each error reason with its count
// and an example, and the unsuccessful status codes.
func (s Summary) Cause() string {
	var parts []string
	for _, reason := range s.sortedReasons() {
		parts = append(parts, fmt.Sprintf("%s %d (%s)", reason, s.reasons[reason], s.example[reason]))
	}
	for _, code := range slices.Sorted(maps.Keys(s.codes)) {
		if code < 200 || code >= 400 {
			parts = append(parts, fmt.Sprintf("status %d: %d", code, s.codes[code]))
		}
	}
	if len(parts) == 0 {
		return "no request was sent"
	}
	return strings.Join(parts, ", ")
}

// Print writes the summary's Figures: counts, status codes, error
// reasons with an example each, and nearest-rank percentiles of latency
// (ok requests) and schedule lag (sent requests), or - when there is none.
func (s Summary) Print(w io.Writer) {
	f := s.Figures()
	fmt.Fprintf(w, "requests %d: ok %d, failed %d, not sent %d\n", f.Requests, f.OK, f.Failed, f.NotSent)
	if len(f.Status) == 0 {
		fmt.Fprintln(w, "status: no response")
	}
	for _, c := range f.Status {
		fmt.Fprintf(w, "status %d: %d\n", c.Code, c.Count)
	}
	if len(f.Errors) == 0 {
		fmt.Fprintln(w, "errors: none")
	} else {
		counts := make([]string, len(f.Errors))
		for i, e := range f.Errors {
			counts[i] = fmt.Sprintf("%s %d", e.Reason, e.Count)
		}
		fmt.Fprintf(w, "errors: %s\n", strings.Join(counts, ", "))
		for _, e := range f.Errors {
			fmt.Fprintf(w, "  %s: %s\n", e.Reason, e.Example)
		}
	}
	if l := f.LatencyMS; l == nil {
		fmt.Fprintln(w, "latency ms:      -")
	} else {
		fmt.Fprintf(w, "latency ms:      p50 %.2f  p95 %.2f  p99 %.2f  max %.2f\n", l.P50, l.P95, l.P99, l.Max)
	}
	if l := f.ScheduleLagMS; l == nil {
		fmt.Fprintln(w, "schedule lag ms: -")
	} else {
		fmt.Fprintf(w, "schedule lag ms: p50 %.3f  p99 %.3f  max %.3f\n", l.P50, l.P99, l.Max)
	}
	fmt.Fprintln(w, f.onSchedule())
}

// onSchedule is the summary line on how well the schedule was kept: the
// share of started requests that started within LateAfter, the late and
// skipped counts, and the rate at which requests started.
func (f Figures) onSchedule() string {
	if f.OnSchedulePct == nil {
		return fmt.Sprintf("on schedule: - (late 0 of 0 started, skipped %d)", f.Skipped)
	}
	rate := "-"
	if f.StartedPerS != nil {
		rate = fmt.Sprintf("%.1f", *f.StartedPerS)
	}
	return fmt.Sprintf("on schedule: %.2f%% started within %v (late %d of %d started, skipped %d), %s req/s started",
		*f.OnSchedulePct, LateAfter, f.Late, f.Started, f.Skipped, rate)
}

// Progress is the summary so far in one line, for a long run's progress
// reports: requests sent (those answered or failed: ok + errors, one in
// flight counted when it ends, as Print counts them), ok, errors
// (Failed, skipped ones included), and the schedule lag p99 of those
// started, in ms ("-" before the first).
func (s *Summary) Progress() string {
	lag := "-"
	if s.lag.N() > 0 {
		lag = fmt.Sprintf("%.3f ms", s.lag.Percentile(99))
	}
	return fmt.Sprintf("sent %d, ok %d, errors %d, schedule lag p99 %s", s.Total-s.NotSent, s.OK, s.Failed, lag)
}

// PrintDownloads writes one line per slow reader (DownloadFigures).
func PrintDownloads(w io.Writer, downloads []Download) {
	for _, d := range DownloadFigures(downloads) {
		status := "complete"
		if !d.Complete {
			status = "incomplete: " + d.Error
		}
		fmt.Fprintf(w, "slow reader %d: status %d, %d bytes in %.2f s (%s)\n", d.Client, d.Status, d.Bytes, d.ReceiveS, status)
	}
}
