package tempcliff

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// shapeConfig is --quick's matrix: 2 slow readers on sync-2 of 6 MiB and
// 32 MiB against proxy_max_temp_file_size 8m, and of 16 MiB against 0
// (memory buffers only); /fast at 10 req/s for 1.5 s. The readers read
// at 4 MiB/s, not --quick's 8: a 32 MiB response holds its worker until
// the client has read what the path does not hold (19 MiB held: 8 in the
// temp file, the rest in socket and proxy buffers), 1.7 s at 8 MiB/s, and
// a run beside another package's tests started the downloads late enough
// that /fast's 1.5 s missed it (p95 19 ms); at 4 MiB/s it is 3.3 s.
func shapeConfig() *Config {
	c := Published()
	c.Reduce()
	c.Reps = 1
	c.SlowReader.ReadRate = 4 << 20
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(1500*time.Millisecond)
	return c
}

// checkShape asserts the cliff: below the max temp size the proxy takes
// the whole response at once and the app is free within a fraction of the
// download; above it the temp file fills and the app is held until the
// client has drained most of it; with 0, memory buffers only, the app is
// held as well. Every download completes. Bounds only tell a held app
// (seconds) from a free one.
func checkShape(t *testing.T, res *Result, env *lab.Env) {
	t.Helper()
	if len(res.Runs) != 3 {
		t.Fatalf("%d runs, want 3", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Status != recorder.RunOK || r.DownloadsComplete != 2 || !r.AppSendS.Valid || !r.ReceiveS.Valid {
			t.Errorf("%s: %s %s, %d downloads complete, app_send %v, receive %v", r.RunID, r.Status, r.Reason, r.DownloadsComplete, r.AppSendS, r.ReceiveS)
		}
		t.Logf("%s: app_send %v s, receive %v s, /fast p95 %v ms, temp peak %v MiB", r.RunID, r.AppSendS, r.ReceiveS, r.P95MS, r.TempPeakMiB)
	}
	below, above, memory := res.Runs[0], res.Runs[1], res.Runs[2]
	if below.AppSendS.Value >= below.ReceiveS.Value/4 {
		t.Errorf("below the limit: app_send %.3f s of a %.3f s download; want the app free at once", below.AppSendS.Value, below.ReceiveS.Value)
	}
	if above.AppSendS.Value < above.ReceiveS.Value/2 || above.AppSendS.Value < 4*below.AppSendS.Value {
		t.Errorf("above the limit: app_send %.3f s of a %.3f s download (below: %.3f s); want the app held most of the download",
			above.AppSendS.Value, above.ReceiveS.Value, below.AppSendS.Value)
	}
	if !below.P95MS.Valid || below.P95MS.Value >= 500 || !above.P95MS.Valid || above.P95MS.Value < 1000 {
		t.Errorf("/fast p95 below the limit %v ms, above %v ms; want < 500 and >= 1000 (both workers held)", below.P95MS, above.P95MS)
	}
	if memory.AppSendS.Value < memory.ReceiveS.Value/4 {
		t.Errorf("memory buffers only: app_send %.3f s of a %.3f s download; want the app held", memory.AppSendS.Value, memory.ReceiveS.Value)
	}
	if !above.TempPeakMiB.Valid || above.TempPeakMiB.Value < 7.5 || above.TempPeakMiB.Value > 2*8+0.5 {
		t.Errorf("above the limit: temp peak %v MiB; want full temp files, at most 8 MiB per response", above.TempPeakMiB)
	}
	if memory.TempPeakMiB.Valid && memory.TempPeakMiB.Value > 0 {
		t.Errorf("memory buffers only: temp peak %v MiB, want none", memory.TempPeakMiB)
	}
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(env.Out, downloadFile))
	if err != nil || len(larges) != 6 {
		t.Errorf("large-responses.csv: %d rows (%v), want 6", len(larges), err)
	}
	runs, err := recorder.ReadFile[RunRow](filepath.Join(env.Out, runFile))
	if err != nil || len(runs) != 3 {
		t.Errorf("temp-runs.csv: %d rows (%v), want 3", len(runs), err)
	}
	if t.Failed() {
		logRows(t, larges, labtest.ReadRows[recorder.Request](t, env.Out))
	}
}

// logRows leaves what a failed shape is made of in the test's log (a CI
// run keeps only its log): each download's app_send and receive times,
// whose medians the run rows hold (one download whose app was free at
// once halves a median of two), and when each /fast request ran and how
// long it took (a /fast schedule that missed the downloads' hold).
func logRows(t *testing.T, larges []recorder.LargeResponse, reqs []recorder.Request) {
	t.Helper()
	for _, l := range larges {
		t.Logf("download %s/%d: %s, %d bytes, receive %.3f s, app_send %v s", l.RunID, l.Client, l.Outcome, l.Bytes, l.ReceiveS, l.AppSendS)
	}
	for _, r := range reqs {
		t.Logf("/fast %s #%d: scheduled %.3f s, started %.3f s, latency %.1f ms, status %d %s", r.RunID, r.Seq, r.ScheduledS, r.StartS, r.LatencyMS, r.Status, r.Error)
	}
}

func runShape(t *testing.T, stackName string) {
	env := labtest.Env(t, stackName)
	res, err := shapeConfig().Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, res.(*Result), env)
}

// TestTempCliffShapeEmbedded runs the reduced matrix on the embedded
// stack.
func TestTempCliffShapeEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	runShape(t, stack.NameEmbedded)
}

// TestTempCliffShapeReal runs it on real Gunicorn + NGINX under the
// published limits.
func TestTempCliffShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	runShape(t, stack.NameReal)
}
