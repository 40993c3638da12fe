package stalledreader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// shapeConfig is a reduced matrix: 2 readers of an 8 MiB /large (more
// than loopback's socket buffers hold, so the app blocks) that stall
// after 64 KiB for 5 s, give up at 15 s; direct on sync-2 with a 2 s app
// timeout, and behind the buffering proxy with a 2 s send_timeout; /fast
// at 10 req/s for 3 s.
func shapeConfig() *Config {
	c := Published()
	c.Reps, c.Size = 1, 8<<20
	c.Client.Rate, c.Client.Stall, c.Client.GiveUp = 1<<20, lab.Duration(5*time.Second), lab.Duration(15*time.Second)
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(3*time.Second)
	two := lab.Duration(2 * time.Second)
	c.Conditions = []Condition{
		{Route: stack.RouteDirect, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: two},
		{Route: stack.RouteBufferingOn, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: lab.Duration(10 * time.Second), SendTimeout: two},
	}
	return c
}

func runShape(t *testing.T, stackName string) (*Result, *lab.Env) {
	t.Helper()
	env := labtest.Env(t, stackName)
	res, err := shapeConfig().Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*Result), env
}

// checkShape asserts the experiment's shape: directly, the app's timeout
// kills the sync workers stuck writing to stalled readers (WORKER TIMEOUT
// in the log), whose downloads end truncated, and /fast waits for the
// kill; behind the buffering proxy the app is released at once, /fast is
// unharmed, and send_timeout closes the stalled readers, whose downloads
// end truncated too. Latency bounds only tell seconds from tens of
// milliseconds.
func checkShape(t *testing.T, res *Result, env *lab.Env) (direct, proxied RunRow) {
	t.Helper()
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Status != recorder.RunOK {
			t.Errorf("%s: %s: %s", r.RunID, r.Status, r.Reason)
		}
		if r.FastOK != r.FastPlanned || r.FastPlanned == 0 {
			t.Errorf("%s: /fast %d ok of %d planned", r.RunID, r.FastOK, r.FastPlanned)
		}
	}
	direct, proxied = res.Runs[0], res.Runs[1]
	if direct.Truncated != 2 || direct.ByAppTimeout != 2 || !direct.WorkerTimeouts.Valid || direct.WorkerTimeouts.Value < 1 {
		t.Errorf("%s: truncated %d, by app timeout %d, worker timeouts %v: want both cut by the app's timeout", direct.RunID,
			direct.Truncated, direct.ByAppTimeout, direct.WorkerTimeouts)
	}
	if !direct.P95MS.Valid || direct.P95MS.Value < 500 {
		t.Errorf("%s: /fast p95 %v ms, want >= 500 (both workers stuck until killed)", direct.RunID, direct.P95MS)
	}
	if proxied.Truncated != 2 || proxied.BySendTimeout != 2 || proxied.WorkerTimeouts.Value != 0 {
		t.Errorf("%s: truncated %d, by send_timeout %d, worker timeouts %v: want both cut by send_timeout, no worker killed", proxied.RunID,
			proxied.Truncated, proxied.BySendTimeout, proxied.WorkerTimeouts)
	}
	if !proxied.P95MS.Valid || proxied.P95MS.Value >= 500 {
		t.Errorf("%s: /fast p95 %v ms, want < 500", proxied.RunID, proxied.P95MS)
	}
	if !proxied.AppHeldS.Valid || proxied.AppHeldS.Value >= 1 {
		t.Errorf("%s: app held %v s, want under 1 s (the proxy takes the body at once)", proxied.RunID, proxied.AppHeldS)
	}
	downloads, err := recorder.ReadFile[Download](filepath.Join(env.Out, downloadFile))
	if err != nil || len(downloads) != 4 {
		t.Fatalf("stalled-downloads.csv: %d rows (%v), want 4", len(downloads), err)
	}
	for _, d := range downloads {
		// The stall began after the first 64 KiB; the client then got
		// what the kernels' buffers held, and the rest never came.
		if d.StallBytes != 64<<10 || d.Bytes <= d.StallBytes || d.Bytes >= d.ContentLength || d.ContentLength != 8<<20 {
			t.Errorf("%s client %d: stalled at %d, %d of %d bytes", d.RunID, d.Client, d.StallBytes, d.Bytes, d.ContentLength)
		}
		if !d.ResumedS.Valid || d.EndS >= d.GiveUpS {
			t.Errorf("%s client %d: resumed %v, ended at %.3f s: want the truncation seen before the client's bound", d.RunID, d.Client, d.ResumedS, d.EndS)
		}
		t.Logf("%s client %d: %d of %d bytes, %s by %s, ended %.2f s", d.RunID, d.Client, d.Bytes, d.ContentLength, d.Outcome, d.EndedBy, d.EndS)
	}
	// The evidence behind ended_by: the proxy logged closing each proxied
	// download, by its URL, and nothing of the direct ones.
	for _, r := range []RunRow{direct, proxied} {
		cuts := clientTimeoutLines(t, env.LogDir(), r.RunID)
		for client := range r.Clients {
			n := 0
			for _, l := range cuts {
				if strings.Contains(l, fmt.Sprintf(`request: "GET /large?download=%d HTTP/1.1"`, client)) {
					n++
				}
			}
			if want := map[bool]int{true: 1}[r.RunID == proxied.RunID]; n != want {
				t.Errorf("%s client %d: %d client timed out lines name it, want %d; the run's:\n%s", r.RunID, client, n, want, strings.Join(cuts, ""))
			}
		}
	}
	return direct, proxied
}

// clientTimeoutLines are the lines of a run's proxy log (NGINX's or the
// embedded proxy's) in which send_timeout closed a client.
func clientTimeoutLines(t *testing.T, logDir, runID string) []string {
	t.Helper()
	var out []string
	for _, name := range []string{"nginx", "proxy"} {
		b, err := os.ReadFile(filepath.Join(logDir, runID+"-"+name+".log"))
		if err != nil {
			continue
		}
		for l := range strings.Lines(string(b)) {
			if strings.Contains(l, "client timed out (110: Connection timed out) while sending to client") {
				out = append(out, l)
			}
		}
	}
	return out
}

// TestStalledReaderShapeEmbedded runs the reduced matrix on the embedded
// stack: real child processes, real loopback sockets.
func TestStalledReaderShapeEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	res, env := runShape(t, stack.NameEmbedded)
	checkShape(t, res, env)
}
