package slowclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/instrument"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// cutAppEnv makes the test binary serve as the cut app (see serveCut).
const cutAppEnv = "SLOWLAB_TEST_CUT_APP"

func init() {
	if os.Getenv(cutAppEnv) != "" {
		serveCut()
		os.Exit(0)
	}
	stack.RegisterApp(cutApp{})
}

// serveCut answers /fast and cuts every /large response after a quarter
// of its declared 4 MiB, then exits when its parent stops it.
func serveCut() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(1)
	}
	fmt.Println(child.ReadyLine(child.Field{Key: child.KeyListen, Value: ln.Addr().String()}))
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/large" {
			w.Write([]byte(`{"ok": true}`))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(4<<20))
		w.Write(make([]byte, 1<<20))
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // a FIN: the client reads the body to its early end
		}
	}))
}

// cutApp is an app component (registered for this test binary only) whose
// every download is cut mid-way and which never reports a send time: a
// stack is an app × a proxy, and a test can bring its own app.
type cutApp struct{}

func (cutApp) Name() string                  { return "cut" }
func (cutApp) Needs() []string               { return nil }
func (cutApp) Packages() []string            { return nil }
func (cutApp) Real() bool                    { return false }
func (cutApp) Validate(stack.Settings) error { return nil }
func (cutApp) Models() []stack.Model         { return []stack.Model{{Name: "sync", Sized: true}} }

func (cutApp) Start(ctx context.Context, d stack.Deployment, _ stack.Settings, cg *cgroup.Cgroup) (stack.RunningApp, error) {
	p, err := child.Start(ctx, "cut", filepath.Join(d.LogDir, d.RunID+"-cut.log"), []string{os.Args[0]},
		append(cgroup.ChildEnv(os.Environ(), cg), cutAppEnv+"=1"))
	if err != nil {
		return nil, err
	}
	return &cutRun{p}, nil
}

type cutRun struct{ p *child.Process }

func (r *cutRun) Process() *child.Process { return r.p }
func (r *cutRun) Addr() string            { return r.p.Ready()[child.KeyListen] }
func (r *cutRun) Stop() error             { return r.p.Stop(time.Second) }
func (r *cutRun) AppSend(context.Context) (map[string]float64, error) {
	return map[string]float64{}, nil
}

// A slow download cut mid-way says so in large-responses.csv, stays out
// of the medians, fails its run with the reason, and conditions.csv counts
// the run as excluded instead of summarizing it.
func TestCutDownloadFailsItsRun(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "sync-2", 1}}
	c.Reps, c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 1, 10, 0, lab.Duration(time.Second)
	c.Large.Size, c.SlowReader.ReadRate = 4<<20, 4<<20
	env := testEnv(t, "cut+embedded")
	res := run(t, c, env)
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(env.Out, "large-responses.csv"))
	if err != nil || len(larges) != 1 {
		t.Fatalf("large-responses.csv: %+v, %v", larges, err)
	}
	l := larges[0]
	if l.Complete || l.Outcome != recorder.DownloadShortBody || l.Bytes >= 4<<20 || !strings.Contains(l.Error, "incomplete") {
		t.Errorf("download %+v: want outcome short_body, not complete, with the reason", l)
	}
	r := res.Runs[0]
	if r.Status != recorder.RunFailed || !strings.HasPrefix(r.Reason, "1 of 1 downloads incomplete (client 0: short_body") {
		t.Errorf("run status %q reason %q: want failed, naming the incomplete download", r.Status, r.Reason)
	}
	if r.AppSendS.Valid || r.ClientReceiveS.Valid {
		t.Errorf("run app_send_s %v client_receive_s %v: the cut download entered the medians", r.AppSendS, r.ClientReceiveS)
	}
	if r.FastPlanned != 10 || r.FastSent != 10 || r.FastTotal != 10 {
		t.Errorf("run planned %d sent %d rows %d, want 10 each", r.FastPlanned, r.FastSent, r.FastTotal)
	}
	conds, err := recorder.ReadFile[recorder.Condition](filepath.Join(env.Out, "conditions.csv"))
	if err != nil || len(conds) != 1 || conds[0].Runs != 0 || conds[0].RunsExcluded != 1 || conds[0].P95MS.Valid {
		t.Errorf("conditions.csv %+v, %v: want the condition with 0 runs and 1 excluded", conds, err)
	}
}

// TestExporterKilledMidRun kills the run's exporter: the gap shows as error
// rows with no values, sampling resumes when the lab has restarted it, and
// the run still completes. The restart waits 1 s (five of the sampler's
// ticks) rather than 100 ms: a fresh-clone CI run restarted the exporter
// between two ticks and saw no gap at all.
func TestExporterKilledMidRun(t *testing.T) {
	slowlabtest.Timing(t)
	saved := instrument.ExporterRestartDelay
	instrument.ExporterRestartDelay = time.Second
	t.Cleanup(func() { instrument.ExporterRestartDelay = saved })
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "sync-2", 0}}
	c.Reps, c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 1, 10, 0, lab.Duration(6*time.Second)
	env := testEnv(t, stack.NameEmbedded)
	// Killed once 5 requests were measured; the rest of the 6 s run leaves
	// the lab time to restart it.
	var exporterPID, measured, killed int
	env.OnRunStart = func(_ string, pids map[string]int) { exporterPID = pids["exporter"] }
	env.OnRequest = func(string) {
		if measured++; measured == 5 {
			syscall.Kill(exporterPID, syscall.SIGKILL)
			killed = exporterPID
		}
	}
	res := run(t, c, env)
	if killed == 0 {
		t.Fatal("the exporter was never killed")
	}
	if r := res.Runs[0]; r.Status != recorder.RunOK || r.FastOK != 60 {
		t.Fatalf("run %+v: want ok with 60 requests", r)
	}
	samples, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(env.Out, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var seq []bool // per app row: error?
	for _, s := range samples {
		if s.Component != "app" {
			continue
		}
		failed := s.Error != ""
		if failed && (s.CPUSeconds.Valid || s.RSSBytes.Valid || s.Processes.Valid) {
			t.Errorf("error row carries values: %+v", s)
		}
		seq = append(seq, failed)
	}
	first := slices.Index(seq, true)
	if first < 1 {
		t.Fatalf("app rows (true = error) %v: want good rows, then a gap", seq)
	}
	if resumed := slices.Index(seq[first:], false); resumed < 0 {
		t.Errorf("app rows %v: sampling never resumed after the exporter was restarted", seq)
	}
}

// TestDiskFullStopsTheSession fills the results disk (a real 28 KiB
// tmpfs, which the first run's 150 requests overflow): the session ends
// with the cause, the rows that were written stay readable and complete,
// and runs.csv does not call the run ok with rows its files lack.
func TestDiskFullStopsTheSession(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "sync-2", 0}}
	c.Reps, c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 2, 50, 0, lab.Duration(3*time.Second)
	env := testEnv(t, "embedded")
	env.Out = filepath.Join(slowlabtest.TinyDisk(t, 28<<10), "results")
	res, err := c.Run(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Run: %v, want the full disk named", err)
	}
	reqs, err := recorder.ReadFile[recorder.Request](filepath.Join(env.Out, "requests.csv"))
	if err != nil || len(reqs) == 0 || len(reqs) >= 150 {
		t.Fatalf("requests.csv: %d rows, %v; want the rows that fitted, readable", len(reqs), err)
	}
	runs := res.(*Result).Runs
	if len(runs) != 1 || runs[0].Status != recorder.RunFailed || !strings.Contains(runs[0].Reason, "results not all written") {
		t.Errorf("runs %+v: want the one run, failed because its results were not all written", runs)
	}
}
