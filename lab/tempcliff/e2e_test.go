package tempcliff

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// shapeConfig is --quick's matrix at --quick's rate, 8 MiB/s, with the
// sizes whose app the checks want held made too large for the path to
// hold (heldSize): 2 slow readers on sync-2 of 6 MiB against
// proxy_max_temp_file_size 8m, of heldSize against 8m, and of heldSize
// against 0 (memory buffers only); /fast at 10 req/s for 1.5 s.
//
// --quick's own 32 MiB against 8m and 16 MiB against 0 are held only
// while the proxy's receive buffer from the app stays small: nobody sets
// it, so receive autotuning may grow it up to tcp_rmem's maximum (32 MiB
// on Linux 6.18), and a path that holds the whole response frees its
// worker at once. Sampled with ss here it grew to 0.5-4.6 MiB (32 MiB
// downloads, 20 of them, idle and beside buffer-sweep's tests and a CPU
// hog); once, in a whole-suite run, the 32 MiB run's row said app_send
// 3.07 s of 8.02 s and /fast p95 86 ms, a median of one held download and
// one whose app was free at once (and, at 8 MiB/s, p95 19 ms: /fast never
// waited), and a proxy receive buffer starting at 20 MiB (tcp_rmem's
// default, in a network namespace) gave app_send 0.10 and 0.21 s and p95
// 10 ms.
func shapeConfig(t *testing.T) *Config {
	t.Helper()
	c := Published()
	c.Reduce()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(1500*time.Millisecond)
	net := kernelnet.NetSettings(kernelnet.HostNamespace, nil, nil)
	for i, cond := range c.Conditions {
		if cond.MaxTempFileSize == 0 || cond.Size > cond.MaxTempFileSize {
			c.Conditions[i].Size = max(cond.Size, heldSize(t, net, int64(cond.MaxTempFileSize)))
		}
	}
	return c
}

// heldSize is a response size that holds its app for at least half of
// its download on the buffering route with proxy_max_temp_file_size
// maxTemp, however the kernel sizes the path's socket buffers: twice the
// most the path can hold (pathmodel's Most, every autotuned buffer at its
// maximum, widened by the model's measured MaxOver), rounded up to a MiB.
func heldSize(t *testing.T, net *recorder.NetSettings, maxTemp int64) lab.Size {
	t.Helper()
	var c pathmodel.Config
	if err := pathmodel.NetConfig(net, &c); err != nil {
		t.Fatalf("the kernel's socket buffer settings, to size the held downloads: %v", err)
	}
	c.Route, c.ClientRcvBuf = stack.RouteBufferingOn, loadgen.DefaultSlowRcvBuf
	c.Proxy = stack.Deployment{Route: c.Route, MaxTempFileSize: &maxTemp}.ResponseBuffers()
	p, err := pathmodel.Predict(c)
	if err != nil {
		t.Fatalf("the path's capacity, to size the held downloads: %v", err)
	}
	const mib = 1 << 20
	size := lab.Size(math.Ceil(2*(1+pathmodel.MaxOver)*float64(p.Most())/mib) * mib)
	t.Logf("max temp %d MiB: the path holds %s, at most %.1f MiB with the proxy's receive buffer grown to %d MiB: held size %d MiB",
		maxTemp/mib, p, float64(p.Most())/mib, p.ProxyRecvMax/mib, size/mib)
	return size
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
	res, err := shapeConfig(t).Run(context.Background(), env)
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
