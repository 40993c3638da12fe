package idleconn

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

// short is the experiment with K idle connections on one server, a
// timeout of 3 s in the app and the proxy, each connection held at most
// hold, and /fast for 3 s.
func short(server string, k int, hold time.Duration, routes ...stack.Route) *Config {
	c := Published()
	c.RouteNames, c.ServerNames, c.Modes, c.Conns = routes, []string{server}, []string{"idle"}, []int{k}
	c.Hold, c.AppTimeout, c.HeaderTimeout = lab.Duration(hold), lab.Duration(3*time.Second), lab.Duration(3*time.Second)
	c.Fast.Duration = lab.Duration(3 * time.Second)
	return c
}

// runIdle runs c in env, checks idle-runs.csv and idle-conns.csv agree
// with what it returned and that RLIMIT_NOFILE is as before, and returns
// the runs by route.
func runIdle(t *testing.T, c *Config, env *lab.Env) map[string]RunRow {
	t.Helper()
	before := noFile(t)
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := noFile(t); got != before {
		t.Errorf("RLIMIT_NOFILE after the run %+v, want %+v as before", got, before)
	}
	res := r.(*Result)
	runs, err := recorder.ReadFile[RunRow](filepath.Join(env.Out, "idle-runs.csv"))
	if err != nil || len(runs) != len(res.Runs) {
		t.Fatalf("idle-runs.csv: %d rows for %d runs, %v", len(runs), len(res.Runs), err)
	}
	conns, err := recorder.ReadFile[Conn](filepath.Join(env.Out, "idle-conns.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]RunRow{}
	total := 0
	for _, run := range res.Runs {
		got[run.Route] = run
		total += run.Clients
		if run.Status != recorder.RunOK {
			t.Errorf("%s: %s: %s", run.RunID, run.Status, run.Reason)
		}
		if run.Connected != run.Clients || run.FIN+run.Reset+run.Bound != run.Clients {
			t.Errorf("%s: %d connected, %d fin + %d reset + %d bound, of %d", run.RunID, run.Connected, run.FIN, run.Reset, run.Bound, run.Clients)
		}
		// The exporter saw the held connections: the app's workers hold at
		// least one each (behind a proxy, the proxy holds them), and
		// descriptors beyond them.
		holder, fds, est := "app", run.AppFDs, run.AppEstablished
		if run.Route != string(stack.RouteDirect) {
			holder, fds, est = "proxy", run.ProxyFDs, run.ProxyEstablished
		}
		if !est.Valid || est.Value < 2 || !fds.Valid || fds.Value < est.Value {
			t.Errorf("%s: %s peak established %v, open fds %v: want at least 2 held connections and their descriptors", run.RunID, holder, est, fds)
		}
		t.Logf("%s: %s", run.RunID, runLine(run))
	}
	if len(conns) != total {
		t.Errorf("idle-conns.csv: %d rows, want %d", len(conns), total)
	}
	// Closed by the 3 s timeouts, not at once: the holder's clock starts
	// when its connect returns, the server's at accept, a few ms earlier
	// (NGINX's timers also run on its cached time), hence the margin.
	for _, cn := range conns {
		if (cn.End == EndFIN || cn.End == EndReset) && cn.HeldS.Value < 2.7 {
			t.Errorf("%s conn %d: closed by the server after %.3f s, before its 3 s timeout", cn.RunID, cn.Seq, cn.HeldS.Value)
		}
	}
	return got
}

// checkShape asserts the published shape on direct sync-2 and behind the
// proxy: idle connections hold the sync workers until the app's timeout
// closes them (no response), so /fast starves; the proxy holds them itself
// until its client_header_timeout (a FIN, no response) and /fast is served.
func checkShape(t *testing.T, got map[string]RunRow) {
	t.Helper()
	direct, proxied := got["direct"], got["proxy-buffering-on"]
	if direct.FIN+direct.Reset < 2 || direct.Responded != 0 {
		t.Errorf("direct: %d closed by the server, %d with a response first; want the timeout to close some, no response", direct.FIN+direct.Reset, direct.Responded)
	}
	if direct.FastOK > 0 && direct.FastP95MS.Value < 1000 {
		t.Errorf("direct: /fast p95 %.1f ms with every worker held, want seconds", direct.FastP95MS.Value)
	}
	if proxied.FIN != proxied.Clients || proxied.Responded != 0 {
		t.Errorf("proxy: %d of %d closed with a FIN, %d with a response first; want every one closed at the header timeout, no response", proxied.FIN, proxied.Clients, proxied.Responded)
	}
	if proxied.FastOK != proxied.FastSent || proxied.FastP95MS.Value >= 1000 {
		t.Errorf("proxy: /fast %d/%d ok, p95 %.1f ms; want every one ok, well under a second", proxied.FastOK, proxied.FastSent, proxied.FastP95MS.Value)
	}
}

// TestIdleShapeEmbedded is the shape on the embedded stack; six
// connections on two workers, 3 s each: the first ones are closed by the
// worker timeout, the last wait past the 8 s bound.
func TestIdleShapeEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	c := short("sync-2", 6, 8*time.Second, stack.RouteDirect, stack.RouteBufferingOn)
	got := runIdle(t, c, labtest.Env(t, stack.NameEmbedded))
	checkShape(t, got)
	if d := got["direct"]; d.Bound < 1 {
		t.Errorf("direct: none of %d connections waited past the bound for a worker", d.Clients)
	}
}

// checkGthreadHolds: idle connections as many as the threads, held past
// the app's timeout to the bound, starve /fast until their holders leave.
func checkGthreadHolds(t *testing.T, stackName string) {
	c := short("gthread-1x2", 3, 6*time.Second, stack.RouteDirect)
	r := runIdle(t, c, labtest.Env(t, stackName))["direct"]
	if r.Bound != r.Clients {
		t.Errorf("gthread: %d of %d lasted to the bound; want every one held past the 3 s timeout", r.Bound, r.Clients)
	}
	if r.FastOK > 0 && r.FastP95MS.Value < 1000 {
		t.Errorf("gthread: /fast p95 %.1f ms with both threads held, want seconds", r.FastP95MS.Value)
	}
}

// TestGthreadHoldsIdleEmbedded: the embedded gthread worker does as
// Gunicorn 20's (appserver's threadListener).
func TestGthreadHoldsIdleEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	checkGthreadHolds(t, stack.NameEmbedded)
}
