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

	"github.com/slowlab/slowlab/recorder"
)

// Summary is what `slowlab loadgen` says about its open-loop requests:
// counts, status codes, error reasons with an example each, and the
// latencies and schedule lags.
type Summary struct {
	Total, OK, Failed, NotSent int
	codes                      map[int]int    // responses by status code
	reasons                    map[string]int // failed requests by ErrorReason
	example                    map[string]string
	lat, lag                   []float64 // latency of ok requests, lag of sent ones
}

func Summarize(results []Result) Summary {
	s := Summary{Total: len(results), codes: map[int]int{}, reasons: map[string]int{}, example: map[string]string{}}
	for _, r := range results {
		if r.NotSent {
			s.NotSent++
			continue
		}
		s.lag = append(s.lag, ms(r.ScheduleLag))
		if r.Status > 0 {
			s.codes[r.Status]++
		}
		if r.Err == nil && r.Status >= 200 && r.Status < 400 {
			s.OK++
			s.lat = append(s.lat, ms(r.Latency))
			continue
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
	return s
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

// print writes the summary: counts, status codes, error reasons with an
// example each, and nearest-rank percentiles of latency (ok requests) and
// schedule lag (sent requests), or - when there is none.
func (s Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "requests %d: ok %d, failed %d, not sent %d\n", s.Total, s.OK, s.Failed, s.NotSent)
	if len(s.codes) == 0 {
		fmt.Fprintln(w, "status: no response")
	}
	for _, code := range slices.Sorted(maps.Keys(s.codes)) {
		fmt.Fprintf(w, "status %d: %d\n", code, s.codes[code])
	}
	reasons := s.sortedReasons()
	if len(reasons) == 0 {
		fmt.Fprintln(w, "errors: none")
	} else {
		counts := make([]string, len(reasons))
		for i, reason := range reasons {
			counts[i] = fmt.Sprintf("%s %d", reason, s.reasons[reason])
		}
		fmt.Fprintf(w, "errors: %s\n", strings.Join(counts, ", "))
		for _, reason := range reasons {
			fmt.Fprintf(w, "  %s: %s\n", reason, s.example[reason])
		}
	}
	pct := func(v []float64, p float64) float64 { return recorder.NearestRank(v, p) }
	if len(s.lat) == 0 {
		fmt.Fprintln(w, "latency ms:      -")
	} else {
		fmt.Fprintf(w, "latency ms:      p50 %.2f  p95 %.2f  p99 %.2f  max %.2f\n", pct(s.lat, 50), pct(s.lat, 95), pct(s.lat, 99), pct(s.lat, 100))
	}
	if len(s.lag) == 0 {
		fmt.Fprintln(w, "schedule lag ms: -")
	} else {
		fmt.Fprintf(w, "schedule lag ms: p50 %.3f  p99 %.3f  max %.3f\n", pct(s.lag, 50), pct(s.lag, 99), pct(s.lag, 100))
	}
}

// PrintDownloads writes one line per slow reader.
func PrintDownloads(w io.Writer, downloads []Download) {
	for _, d := range downloads {
		status := "complete"
		if !d.Complete {
			status = fmt.Sprintf("incomplete: %v", d.Err)
		}
		fmt.Fprintf(w, "slow reader %d: status %d, %d bytes in %.2f s (%s)\n", d.Client, d.Status, d.Bytes, d.Receive.Seconds(), status)
	}
}
