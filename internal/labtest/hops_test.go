package labtest

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/hops"
	"github.com/slowlab/slowlab/recorder"
)

// TestAroundShowsTheSampleAndTheOneBefore: a violation's report carries
// its download's rows at its sample and the previous one, not other
// downloads', runs' or samples'.
func TestAroundShowsTheSampleAndTheOneBefore(t *testing.T) {
	row := func(run string, ts float64, d int, hop string, b int64) recorder.Hop {
		return recorder.Hop{RunID: run, TS: ts, Download: d, Hop: hop, Bytes: b, Source: recorder.HopSourceKernel}
	}
	rows := []recorder.Hop{
		row("r1", 0.1, 1, recorder.HopAppWritten, 100),
		row("r1", 0.2, 1, recorder.HopAppWritten, 200),
		row("r1", 0.2, 2, recorder.HopAppWritten, 999),
		row("r2", 0.2, 1, recorder.HopAppWritten, 888),
		row("r1", 0.3, 1, recorder.HopAppWritten, 300),
		row("r1", 0.3, 1, recorder.HopClientRead, 7),
		row("r1", 0.4, 1, recorder.HopAppWritten, 400),
	}
	got := around(rows, hops.Violation{RunID: "r1", TS: 0.3, Download: 1})
	for _, want := range []string{"0.200 s", " 200 ", "0.300 s", " 300 ", " 7 "} {
		if !strings.Contains(got, want) {
			t.Errorf("around: %q lacks %q", got, want)
		}
	}
	for _, not := range []string{"0.100 s", "0.400 s", "999", "888"} {
		if strings.Contains(got, not) {
			t.Errorf("around: %q has %q", got, not)
		}
	}
	if n := strings.Count(got, "\n"); n != 3 {
		t.Errorf("around: %d rows, want 3:\n%s", n, got)
	}
}
