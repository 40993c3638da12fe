package hops

import (
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// TestCheckErrRule: the pass rule of the conservation tests: any
// violation but one of a sample taken while a connection was set up
// fails, and so does a check that judged no sample.
func TestCheckErrRule(t *testing.T) {
	setup := Violation{Missing: []string{"app"}}
	fall := Violation{Missing: []string{"app"}, Reason: "client_read fell from 9 (at 0.100 s) to 1"}
	for _, tc := range []struct {
		name string
		r    Result
		fail bool
	}{
		{"judged, none", Result{Judged: 3}, false},
		{"judged, setup only", Result{Judged: 3, Violations: []Violation{setup}}, false},
		{"judged, a count fell", Result{Judged: 3, Violations: []Violation{setup, fall}}, true},
		{"judged, not conserved", Result{Judged: 3, Violations: []Violation{{ClientReceived: 10}}}, true},
		{"none judged", Result{Skewed: 2, Unmeasured: 1}, true},
	} {
		if err := tc.r.Err(); (err != nil) != tc.fail {
			t.Errorf("%s: %v, want failing %v", tc.name, err, tc.fail)
		}
	}
	if fall.Setup() {
		t.Errorf("a fallen count with a hop missing taken for setup")
	}
}

// TestCheckJitterBounds: a cumulative count may fall by its jitter
// bound, not a byte more (client_read: ReadJitter; app_written from the
// app's socket: WrittenJitter, in a sample whose skew is below it).
func TestCheckJitterBounds(t *testing.T) {
	for _, tc := range []struct {
		file   string
		at     int
		which  func(recorder.Hop) bool
		bound  int64
		reason string
	}{
		{"testdata/nginx-buffered-hops.csv", -1, func(h recorder.Hop) bool { return h.Hop == recorder.HopClientRead }, ReadJitter, "client_read fell"},
		{"testdata/gunicorn-direct-hops.csv", 0, func(h recorder.Hop) bool {
			return h.Hop == recorder.HopAppWritten && h.Source == recorder.HopSourceKernel
		}, WrittenJitter, "app_written fell"},
	} {
		at := tc.at
		if at < 0 {
			rows, err := recorder.ReadFile[recorder.Hop](tc.file)
			if err != nil {
				t.Fatal(err)
			}
			at = len(rows) / 2
		}
		if v := fallBy(t, tc.file, at, tc.which, tc.bound, tc.reason); len(v) != 0 {
			t.Errorf("%s: a fall of %d: %v, want none", tc.reason, tc.bound, v)
		}
		if v := fallBy(t, tc.file, at, tc.which, tc.bound+1, tc.reason); len(v) == 0 {
			t.Errorf("%s: a fall of %d passed the check", tc.reason, tc.bound+1)
		}
	}
}
