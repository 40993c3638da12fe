package loadgen

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/recorder"
)

// A loop that is behind its schedule by more than MaxLag skips the hits
// it cannot start in time and counts them (reason late, with the lag they
// had), instead of sending them ever later; the hits it can still start
// on time are sent.
func TestOpenLoopMaxLagSkipsLateHits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	c := NewClient(ClientOptions{KeepAlive: true})
	defer c.Close()
	m := NewMetrics(prometheus.NewRegistry())
	// Hits 0-9 were due a second ago; 10-19 are due from now on.
	pacer := ConstantPacer{Interval: 100 * time.Millisecond, Duration: 2 * time.Second}
	sum := NewSummary()
	loop := OpenLoop{Client: c, URL: srv.URL, Pacer: pacer, Start: time.Now().Add(-time.Second + 50*time.Millisecond), RunID: "l", Metrics: m,
		MaxLag: 40 * time.Millisecond, DiscardResults: true, OnResult: func(r Result) {
			sum.Add(r)
			row := RequestRow(recorder.RunMeta{RunID: "l"}, time.Now(), r)
			if r.Skipped != math.IsNaN(row.StartS) || r.Skipped && math.IsNaN(row.ScheduleLagMS) {
				t.Errorf("row %+v of result %+v: a skipped hit has its lag and no start", row, r)
			}
		}}
	if res := loop.Run(context.Background()); res != nil {
		t.Errorf("DiscardResults: Run returned %d results", len(res))
	}
	if sum.Total != 20 || sum.Skipped < 10 || sum.Skipped == 20 || sum.reasons["late"] != sum.Skipped || sum.Failed != sum.Skipped {
		t.Errorf("total %d, skipped %d, late errors %d, failed %d: want 20, the 10 past hits (at least) skipped as late and the rest sent",
			sum.Total, sum.Skipped, sum.reasons["late"], sum.Failed)
	}
	if !strings.HasPrefix(sum.example["late"], "late: not started, ") {
		t.Errorf("late example %q", sum.example["late"])
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues("l", RoleFast, "late")); got != float64(sum.Skipped) {
		t.Errorf("late errors metric %v, want %d", got, sum.Skipped)
	}
}

// The summary's percentiles come from a bounded histogram: exact for small
// durations, within 1/2048 above, and bounded memory for any count.
func TestDurationHist(t *testing.T) {
	var h durationHist
	for i := 1; i <= 1_000_000; i++ {
		h.add(time.Duration(i) * time.Microsecond) // 1 µs .. 1 s
	}
	for _, p := range []float64{1, 50, 99, 99.9} {
		want := p / 100 * 1000 // ms
		if got := h.percentile(p); math.Abs(got-want)/want > 1.0/2048 {
			t.Errorf("p%v = %v ms, want %v within 1/2048", p, got, want)
		}
	}
	if got := h.percentile(100); got != 1000 {
		t.Errorf("max %v ms, want 1000", got)
	}
	if len(h.counts) > 30<<histBits {
		t.Errorf("%d buckets for durations up to 1 s", len(h.counts))
	}
	var small durationHist
	for _, d := range []time.Duration{500, 700, 900} {
		small.add(d)
	}
	if got := small.percentile(50); got != ms(700) {
		t.Errorf("p50 of 500, 700, 900 ns = %v ms, want exactly 0.0007", got)
	}
	var empty durationHist
	if !math.IsNaN(empty.percentile(50)) {
		t.Error("percentile of nothing is not NaN")
	}
}
