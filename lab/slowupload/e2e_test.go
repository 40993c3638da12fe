package slowupload

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
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// shapeConfig is a reduced matrix: two 3 MiB uploads at 1 MiB/s (3 s)
// on sync-2 on each route, and one 6 MiB upload (6 s) that outlives a
// 2 s app timeout; /fast at 10 req/s for 2.5 s.
func shapeConfig() *Config {
	c := Published()
	c.Reps, c.Upload.Size, c.Upload.Rate = 1, 3<<20, 1<<20
	c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 10, lab.Duration(250*time.Millisecond), lab.Duration(2500*time.Millisecond)
	long := lab.Duration(30 * time.Second)
	c.Conditions = []Condition{
		{Route: stack.RouteDirect, Server: "sync-2", Uploaders: 2, AppTimeout: long},
		{Route: stack.RouteRequestBufferingOn, Server: "sync-2", Uploaders: 2, AppTimeout: long},
		{Route: stack.RouteRequestBufferingOff, Server: "sync-2", Uploaders: 2, AppTimeout: long},
		{Route: stack.RouteDirect, Server: "sync-2", Uploaders: 1, Size: 6 << 20, AppTimeout: lab.Duration(2 * time.Second)},
	}
	return c
}

// testEnv is labtest.Env (which checks at the end that the run left none
// of this test's processes or cgroups behind).
func testEnv(t *testing.T, stackName string) *lab.Env {
	t.Helper()
	return labtest.Env(t, stackName)
}

func runShape(t *testing.T, stackName string) (*Result, *lab.Env) {
	t.Helper()
	env := testEnv(t, stackName)
	res, err := shapeConfig().Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*Result), env
}

// checkShape asserts the experiment's shape: two slow uploads starve
// sync-2 directly and behind a proxy streaming the body, not behind one
// that buffers it (which spools the bodies to a temp file and hands them
// to the app at once); the upload that outlives the app's timeout is cut
// (a reset or a 5xx), an outcome of an ok run. Latency bounds only tell
// seconds from tens of milliseconds.
func checkShape(t *testing.T, res *Result, env *lab.Env) RunRow {
	t.Helper()
	if len(res.Runs) != 4 {
		t.Fatalf("%d runs, want 4", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Status != recorder.RunOK {
			t.Errorf("%s: %s: %s", r.RunID, r.Status, r.Reason)
		}
	}
	direct, on, off, timeout := res.Runs[0], res.Runs[1], res.Runs[2], res.Runs[3]
	for _, r := range []RunRow{direct, on, off} {
		if r.UploadsOK != 2 || !r.SendS.Valid || !r.AppReadS.Valid {
			t.Errorf("%s: %d uploads ok, send %v, app read %v; want 2 and both measured", r.RunID, r.UploadsOK, r.SendS, r.AppReadS)
		}
		if r.FastOK != r.FastPlanned || r.FastPlanned == 0 {
			t.Errorf("%s: /fast %d ok of %d planned", r.RunID, r.FastOK, r.FastPlanned)
		}
	}
	for _, r := range []RunRow{direct, off} {
		if !r.P95MS.Valid || r.P95MS.Value < 1000 {
			t.Errorf("%s: /fast p95 %v ms, want >= 1000 (both workers reading slow bodies)", r.RunID, r.P95MS)
		}
		if r.AppReadS.Value < r.SendS.Value/2 {
			t.Errorf("%s: app read %.3f s of a %.3f s send: want the app to read at the client's pace", r.RunID, r.AppReadS.Value, r.SendS.Value)
		}
	}
	if !on.P95MS.Valid || on.P95MS.Value >= 500 {
		t.Errorf("request buffering on: /fast p95 %v ms, want < 500", on.P95MS)
	}
	if on.AppReadS.Value >= on.SendS.Value/4 {
		t.Errorf("request buffering on: app read %.3f s of a %.3f s send: want the body handed over at once", on.AppReadS.Value, on.SendS.Value)
	}
	if !on.TempPeakMiB.Valid || on.TempPeakMiB.Value <= 0 {
		t.Errorf("request buffering on: temp peak %v MiB, want the bodies in temp files", on.TempPeakMiB)
	}
	if timeout.UploadsOK != 0 || timeout.UploadsReset+timeout.Uploads5xx != 1 {
		t.Errorf("%s: outcomes ok %d, reset %d, 5xx %d, timeout %d, other %d: want the upload cut (reset or 5xx)", timeout.RunID,
			timeout.UploadsOK, timeout.UploadsReset, timeout.Uploads5xx, timeout.UploadsTimeout, timeout.UploadsOther)
	}
	uploads, err := recorder.ReadFile[Upload](filepath.Join(env.Out, uploadFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(uploads) != 7 {
		t.Errorf("uploads.csv has %d rows, want 7", len(uploads))
	}
	for _, u := range uploads {
		if u.Outcome == loadgen.UploadOK && (!u.AppBytes.Valid || int64(u.AppBytes.Value) != u.SizeBytes || u.SentBytes != u.SizeBytes) {
			t.Errorf("%s client %d: sent %d, app read %v of %d bytes", u.RunID, u.Client, u.SentBytes, u.AppBytes, u.SizeBytes)
		}
	}
	runs, err := recorder.ReadFile[RunRow](filepath.Join(env.Out, runFile))
	if err != nil || len(runs) != 4 {
		t.Errorf("upload-runs.csv: %d rows (%v), want 4", len(runs), err)
	}
	return timeout
}

// TestSlowUploadShapeEmbedded runs the reduced matrix on the embedded
// stack: real child processes, real loopback sockets.
func TestSlowUploadShapeEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	res, env := runShape(t, stack.NameEmbedded)
	timeout := checkShape(t, res, env)
	t.Logf("%s: worker timeouts in the logs: %v", timeout.RunID, timeout.WorkerTimeouts)
}
