package recorder_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// FuzzParseExposition feeds malformed /metrics pages, seeded from
// testdata/exposition-*, through ParseExposition and SamplesFromFamilies.
// Parsing must not panic and must fail with a message; whatever parses
// must map to one row per component whose cells are None or finite, and
// the rows must survive the resource-samples.csv round trip.
//
// OpenMetrics inputs take milliseconds per line to parse, which makes the
// fuzzer's minimization of a long new input look like a hang; run it with
// a bound:
//
//	go test ./recorder -run '^$' -fuzz FuzzParseExposition -fuzztime 60s -fuzzminimizetime 2s
func FuzzParseExposition(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "exposition-*"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no exposition seeds: %v", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, strings.Contains(s, "openmetrics"))
	}
	f.Fuzz(func(t *testing.T, data []byte, openMetrics bool) {
		ct := recorder.ContentTypeText
		if openMetrics {
			// expfmt's OpenMetrics parser is slow enough per line that
			// long inputs only make the fuzzer crawl.
			if len(data) > 4096 {
				return
			}
			ct = recorder.ContentTypeOpenMetrics
		}
		fams, err := recorder.ParseExposition(bytes.NewReader(data), ct)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		rows := recorder.SamplesFromFamilies("fuzz", 0.2, recorder.Components[:], fams, fams)
		if len(rows) != len(recorder.Components) {
			t.Fatalf("%d rows, want %d", len(rows), len(recorder.Components))
		}
		for i, r := range rows {
			if r.Component != recorder.Components[i] || r.Error != "" {
				t.Fatalf("row %d: component %q, error %q", i, r.Component, r.Error)
			}
			for name, c := range recorder.ResourceCells(&r) {
				if c.Valid && (math.IsNaN(c.Value) || math.IsInf(c.Value, 0)) {
					t.Fatalf("row %d %s: valid cell holds %v", i, name, c.Value)
				}
			}
		}
		checkRoundTrip[recorder.ResourceSample](t, writeRows(t, rows))
	})
}
