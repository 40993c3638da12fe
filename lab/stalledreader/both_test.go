package stalledreader

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// runBothTimeouts deploys sync-2 behind the proxy with buffering off, a
// 5 s app timeout and a 2 s send_timeout, and runs two readers of a
// 64 MiB /large as a run does (each URL names its download, each request
// its id): client 0 stalls after 64 KiB for 8 s, so send_timeout closes
// it and its upstream 2 s into the stall, before the app's timeout;
// client 1 reads 2 MiB/s throughout, so its worker is the one the app's
// timeout kills, 5 s into its body. (At 512 KiB/s send_timeout would cut
// it too: the proxy's socket is writable again only once a third of its
// send buffer, up to tcp_wmem's 4 MiB, has drained, which takes a slow
// reader longer than 2 s.) It
// returns the two downloads' rows, ended_by set as a run sets it, and
// the run's evidence.
func runBothTimeouts(t *testing.T, stackName string) ([]Download, evidence) {
	t.Helper()
	env := labtest.Env(t, stackName)
	if err := os.MkdirAll(env.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := stack.ParseServer("sync-2")
	if err != nil {
		t.Fatal(err)
	}
	const runID = "both.rep1"
	ctx := context.Background()
	running, err := env.Stack.Start(ctx, stack.Deployment{RunID: runID, Route: stack.RouteBufferingOff, Server: srv, LargeSize: 64 << 20,
		AppTimeout: 5 * time.Second, SendTimeout: 2 * time.Second, LogDir: env.LogDir(), WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer running.Stop()
	u, err := loadgen.CheckTarget(running.URL()+"/large", false)
	if err != nil {
		t.Fatal(err)
	}
	readers := []loadgen.SlowReader{{Rate: 1 << 20, Stall: 8 * time.Second, StallAfter: 64 << 10}, {Rate: 2 << 20}}
	rows, ids := make([]Download, len(readers)), make([]string, len(readers))
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, r := range readers {
		ids[i] = runID + "/stalled-" + string(rune('0'+i))
		r.URL, r.RcvBuf, r.ReadSize, r.Timeout, r.RunID = downloadURL(u, i), loadgen.DefaultSlowRcvBuf, loadgen.DefaultSlowReadSize, 40*time.Second, runID
		r.Header = http.Header{appserver.RequestIDHeader: {ids[i]}}
		wg.Go(func() {
			rows[i] = downloadRow(Download{ClientKey: lab.ClientKey{RunKey: lab.RunKey{RunID: runID}}}, t0, r.Run(ctx, i))
		})
	}
	wg.Wait()
	ev, err := gatherEvidence(ctx, running, env.LogDir(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].EndedBy = ender(rows[i], ids[i], ev, t0)
		t.Logf("client %d: %s after %.2f s, %d bytes, ended by %s (app: %+v)", i, rows[i].Outcome, rows[i].EndS, rows[i].Bytes, rows[i].EndedBy, ev.served[ids[i]])
	}
	t.Logf("WORKER TIMEOUT lines %+v; client timed out lines %+v", ev.kills, ev.cuts)
	logEvidenceLines(t, env.LogDir(), runID)
	return rows, ev
}

// checkBothTimeouts: both timeouts fired in one run, each on its own
// download, and each download is attributed to the one that ended it:
// one WORKER TIMEOUT line, naming client 1's worker, and one client
// timeout line, naming client 0.
func checkBothTimeouts(t *testing.T, rows []Download, ev evidence) {
	t.Helper()
	if len(ev.kills) != 1 || len(ev.cuts) != 1 {
		t.Errorf("%d WORKER TIMEOUT lines and %d client timeouts, want one each", len(ev.kills), len(ev.cuts))
	}
	for i, want := range []string{EndedBySendTimeout, EndedByAppTimeout} {
		if d := rows[i]; d.Outcome != OutcomeTruncated || d.EndedBy != want {
			t.Errorf("client %d: %s, ended by %s; want truncated by %s", i, d.Outcome, d.EndedBy, want)
		}
	}
}

func TestStalledReaderBothTimeoutsEmbedded(t *testing.T) {
	rows, ev := runBothTimeouts(t, stack.NameEmbedded)
	checkBothTimeouts(t, rows, ev)
}

func TestStalledReaderBothTimeoutsReal(t *testing.T) {
	rows, ev := runBothTimeouts(t, stack.NameReal)
	checkBothTimeouts(t, rows, ev)
}

// logEvidenceLines logs the lines of a run's logs that name a worker
// timeout or a client timeout, as written.
func logEvidenceLines(t *testing.T, logDir, runID string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(logDir, runID+"-*.log"))
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, "WORKER TIMEOUT") || strings.Contains(line, "timed out") {
				t.Logf("%s: %s", filepath.Base(p), strings.TrimSpace(line))
			}
		}
	}
}
