package assess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// fakeSelfCgroup is a cgroup v2 tree and a /proc that put this process
// in its cgroup "loadgen", whose throttled time grows by throttle at
// each bump: a load generator starved as a CPU-limited container starves
// it, without root.
type fakeSelfCgroup struct {
	root, proc string
	mu         sync.Mutex
	usec       int64
}

func newFakeSelfCgroup(t *testing.T) *fakeSelfCgroup {
	t.Helper()
	f := &fakeSelfCgroup{root: t.TempDir(), proc: t.TempDir()}
	pid := filepath.Join(f.proc, strconv.Itoa(os.Getpid()))
	for _, err := range []error{
		os.WriteFile(filepath.Join(f.root, "cgroup.controllers"), []byte("cpu memory\n"), 0o644),
		os.MkdirAll(filepath.Join(f.root, "loadgen"), 0o755),
		os.MkdirAll(pid, 0o755),
		os.WriteFile(filepath.Join(pid, "cgroup"), []byte("0::/loadgen\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.bump(0)
	return f
}

// bump adds d to the cgroup's throttled time, replacing cpu.stat whole
// so that a reader never sees half of it.
func (f *fakeSelfCgroup) bump(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usec += d.Microseconds()
	dir := filepath.Join(f.root, "loadgen")
	tmp := filepath.Join(dir, "cpu.stat.tmp")
	body := fmt.Sprintf("usage_usec 1000\nuser_usec 500\nsystem_usec 500\nnr_periods 10\nnr_throttled 10\nthrottled_usec %d\n", f.usec)
	if err := os.WriteFile(tmp, []byte(body), 0o644); err == nil {
		os.Rename(tmp, filepath.Join(dir, "cpu.stat"))
	}
}

// TestBaselineOfAStarvedGenerator: the baseline window is judged as a
// level is. With the load generator's cgroup throttled 50 ms at every
// /fast request, a baseline that answered is invalid, run again
// maxTries times, and the probe stops "invalid" without a verdict (it
// was taken: a starved generator's p95, ten times which hides a stack
// that degrades); one that failed is invalid too, not "the stack does
// not answer" (ErrUnavailable, which blames the stack). Unstarved, the
// same baselines are taken and refused as before.
func TestBaselineOfAStarvedGenerator(t *testing.T) {
	for _, tc := range []struct {
		name            string
		starved, failed bool
		want            string // Stopped's start, or "unavailable", or "" for a baseline taken
	}{
		{"starved, answering", true, false, "invalid: the baseline"},
		{"starved, failing", true, true, "invalid: the baseline"},
		{"unstarved, failing", false, true, "unavailable"},
		{"unstarved, answering", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := newFakeSelfCgroup(t)
			var served sync.Map
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Store(time.Now(), true)
				if tc.starved {
					cg.bump(50 * time.Millisecond)
				}
				if tc.failed {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			defer srv.Close()
			reqs, err := recorder.CreateFile[recorder.Request](t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer reqs.Close()
			c := quick("sync-1", stack.RouteDirect, 1, ProbeIdle)
			c.Window, c.Offset = lab.Duration(200*time.Millisecond), 0
			r := &run{cfg: c, env: &lab.Env{}, probe: ProbeIdle, reqs: reqs, fastTimeout: 2 * time.Second, t0: time.Now(),
				t: targets{fast: srv.URL + "/fast", front: srv.Listener.Addr().String()}, maxLag: time.Minute,
				self: newSelfMeter(cg.root, cg.proc)}
			if !r.self.ok {
				t.Fatal("the fake cgroup was not found")
			}
			var v Verdict
			base, ok, err := r.baseline(context.Background(), &v, time.Now())
			t.Logf("baseline %s, ok %v, err %v, stopped %q", base, ok, err, v.Stopped)
			switch tc.want {
			case "":
				if !ok || err != nil || v.Stopped != "" || v.BaselineP95MS <= 0 {
					t.Errorf("ok %v, err %v, stopped %q, p95 %.1f ms; want the baseline taken", ok, err, v.Stopped, v.BaselineP95MS)
				}
			case "unavailable":
				if ok || !errors.Is(err, ErrUnavailable) {
					t.Errorf("ok %v, err %v; want the stack unavailable", ok, err)
				}
			default:
				if ok || err != nil || !strings.HasPrefix(v.Stopped, tc.want) || !strings.Contains(v.Stopped, "throttled") ||
					!strings.Contains(v.Stopped, fmt.Sprintf("invalid %d times", maxTries)) || v.BaselineP95MS != 0 {
					t.Errorf("ok %v, err %v, stopped %q, p95 %.1f ms; want no baseline, %q for the throttling after %d tries",
						ok, err, v.Stopped, v.BaselineP95MS, tc.want, maxTries)
				}
				res := &Result{Assessment: Assessment{Verdicts: []Verdict{v}}}
				if u := res.Unmade(); len(u) != 1 {
					t.Errorf("unmade %v, want the probe without a verdict (exit 3)", u)
				}
			}
		})
	}
}

// TestAssessASlowStack: a stack whose /fast always takes 600 ms is slow,
// not down. The degradation rule is relative to its baseline, so it is
// assessed: idle and slowloris clients, which its server holds without
// slowing /fast, leave it held at the maximum. The wait before the first
// baseline wanted /fast under 500 ms and stopped the probe "not
// recovered" after 30 s (exit 3), a stack no client had touched.
func TestAssessASlowStack(t *testing.T) {
	slowlabtest.EndToEnd(t, "an assessment of seconds against a test server")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	c := quick("sync-2", stack.RouteDirect, 1, ProbeIdle, ProbeSlowloris)
	c.ext = extFlags{fast: srv.URL + "/fast"}
	env := externalEnv(t, c)
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.(*Result).Verdicts {
		t.Logf("%s: %s, baseline p95 %.1f ms, held in place %d", v.Probe, v.Stopped, v.BaselineP95MS, v.HeldInPlace)
		if v.ClientsToDegrade != nil || v.HeldInPlace != 1 || v.BaselineP95MS < 600 || !strings.HasPrefix(v.Stopped, "not degraded") {
			t.Errorf("%s: threshold %v, held in place %d, baseline p95 %.1f ms, %q; want held with 1 over a baseline of 600 ms or more",
				v.Probe, v.ClientsToDegrade, v.HeldInPlace, v.BaselineP95MS, v.Stopped)
		}
	}
}

// TestAssessStackDownAfterAProbe: a stack that stops answering between
// probes (its /fast 503 from the moment the idle probe's client left)
// keeps the verdict already made, judged as ever, and the next probe
// says it failed, the stack not answering. Run
// returned the error alone, so `slowlab assess` printed no verdict,
// judged no bound, and a bound the first probe broke exited 3, not 1.
func TestAssessStackDownAfterAProbe(t *testing.T) {
	slowlabtest.EndToEnd(t, "an assessment of seconds against a test server")
	var down atomic.Bool
	var mu sync.Mutex
	active := map[net.Conn]bool{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case http.StateActive:
			active[c] = true
		case http.StateClosed:
			if !active[c] { // a connection that sent nothing: the idle client
				down.Store(true)
			}
		}
	}
	srv.Start()
	defer srv.Close()
	c := quick("sync-2", stack.RouteDirect, 1, ProbeIdle, ProbeSlowloris)
	c.FailOn = "idle<1"
	c.ext = extFlags{fast: srv.URL + "/fast"}
	env := externalEnv(t, c)
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatalf("Run: %v; want the verdicts, the stack's end one of them", err)
	}
	res := r.(*Result)
	var got []string
	for _, v := range res.Verdicts {
		got = append(got, v.Probe+": "+v.Stopped)
	}
	t.Logf("verdicts:\n%s", strings.Join(got, "\n"))
	if len(res.Verdicts) != 2 || !strings.HasPrefix(res.Verdicts[0].Stopped, "not degraded") ||
		!strings.HasPrefix(res.Verdicts[1].Stopped, "failed: "+ErrUnavailable.Error()) {
		t.Errorf("verdicts %q; want idle held, slowloris failed for the stack not answering", got)
	}
	broken, unjudged := res.Judge()
	if len(broken) != 0 || len(unjudged) != 0 || len(res.Unmade()) != 1 {
		t.Errorf("broken %q, not judged %q, unmade %q; want idle<1 passed, slowloris without a verdict (exit 3)", broken, unjudged, res.Unmade())
	}
	if b, err := os.ReadFile(filepath.Join(env.Out, File)); err != nil || !strings.Contains(string(b), `"stopped": "failed: `+ErrUnavailable.Error()) {
		t.Errorf("%s (%v) lacks slowloris's verdict:\n%s", File, err, b)
	}
}

// TestFailOnNamesTheMistake: a stray comma and bounds joined by another
// separator are named as such; they were `"": want PROBE<N` and "the
// bound must be a whole number" of "idle<3;slowloris<2".
func TestFailOnNamesTheMistake(t *testing.T) {
	for in, want := range map[string]string{
		"idle<3,":            `"idle<3,": an empty bound (a comma too many?)`,
		",idle<3":            "an empty bound (a comma too many?)",
		"idle<3;slowloris<2": `"idle<3;slowloris<2": one bound a term: separate bounds with commas`,
		"idle<3 slowloris<2": "separate bounds with commas",
		"idle<3<4":           "separate bounds with commas",
	} {
		if _, err := ParseFailOn(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFailOn(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestBeforeBaselineOfASlowStack: before the first baseline a stack
// slower than the /fast timeout failed (no probe loaded it: it is not
// "not recovered", as it was said), one faster is taken whatever its
// speed, and after a probe /fast must come back under that probe's
// threshold.
func TestBeforeBaselineOfASlowStack(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name              string
		timeout, prevBase time.Duration
		want              string
	}{
		{"first, slower than the timeout", 100 * time.Millisecond, 0, "failed: /fast did not answer 2xx within 100.0 ms in 1s before the baseline: a stack must answer /fast within 100.0 ms to be assessed"},
		{"first, within the timeout", 5 * time.Second, 0, ""},
		{"after a probe, under its threshold", 5 * time.Second, 100 * time.Millisecond, ""},
		{"after a probe, over its threshold", 5 * time.Second, time.Microsecond, "not recovered: /fast did not answer under 500.0 ms within 1s before the baseline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{cfg: Default(), env: &lab.Env{}, fastTimeout: tc.timeout, t: targets{fast: srv.URL + "/fast"}}
			if got := r.beforeBaseline(context.Background(), tc.prevBase, time.Second); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}
