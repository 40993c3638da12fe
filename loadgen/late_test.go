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
