package slowclient

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// externalConfig is a slow-client config on stack: external.
func externalConfig(ext lab.ExternalSpec, conds ...Condition) *Config {
	c := small(conds...)
	c.StackSpec.Stack = stack.NameExternal
	c.StackSpec.External = &ext
	return c
}

// TestExternalBadInput: each bad external deployment fails with a clear
// error when the session resolves its stack, before anything starts or
// any request is sent.
func TestExternalBadInput(t *testing.T) {
	slowlabtest.Timing(t)
	self := "pid:" + strconv.Itoa(os.Getpid())
	good := lab.ExternalSpec{FastURL: "http://127.0.0.1:1/fast", LargeURL: "http://127.0.0.1:1/large", Route: stack.RouteDirect,
		Server: "sync-2", Groups: map[string][]string{"app": {self}}}
	cond := Condition{stack.RouteDirect, "sync-2", 2}
	for _, tc := range []struct {
		name   string
		edit   func(*Config, *lab.Options)
		want   string
		inScen bool // refused by the scenario's own validation already
	}{
		{"no URLs", func(c *Config, _ *lab.Options) { c.External.FastURL, c.External.LargeURL = "", "" }, "no URLs", true},
		{"no external block", func(c *Config, _ *lab.Options) { c.External = nil }, "no external: block", true},
		{"selector matches nothing", func(c *Config, _ *lab.Options) { c.External.Groups["app"] = []string{"pid:4194303"} }, `"pid:4194303" selects nothing now: no process`, false},
		{"port nobody listens on", func(c *Config, _ *lab.Options) { c.External.Groups["app"] = []string{self, "port:1"} }, "no TCP socket listens on port 1", false},
		{"remote URL", func(c *Config, _ *lab.Options) { c.External.FastURL = "http://192.0.2.1/fast" }, "--allow-remote", false},
		{"allow-remote elsewhere", func(c *Config, o *lab.Options) {
			c.StackSpec.Stack, c.External, o.AllowRemote = stack.NameEmbedded, nil, true
		}, "--allow-remote: only for stack: external", false},
		{"external block elsewhere", func(c *Config, _ *lab.Options) { c.StackSpec.Stack = stack.NameEmbedded }, "external: only with stack: external", true},
		{"no large URL", func(c *Config, _ *lab.Options) { c.External.LargeURL = "" }, "external.large_url: slow-client sends these requests", false},
		{"other route", func(c *Config, _ *lab.Options) { c.Conditions[0].Route = stack.RouteBufferingOn }, "the external deployment is direct", false},
		{"other server", func(c *Config, _ *lab.Options) { c.Conditions[0].Server = "gthread-1x4" }, "server gthread-1x4: the external stack runs sync-2", false},
		{"unknown server", func(c *Config, _ *lab.Options) { c.External.Server = "tomcat-3" }, `external.server: server "tomcat-3"`, true},
		{"proxy without proxy", func(c *Config, _ *lab.Options) { c.External.Groups["proxy"] = []string{self} }, "route direct has no proxy", true},
		{"proxied without proxy", func(c *Config, _ *lab.Options) {
			c.External.Route, c.Conditions[0].Route = stack.RouteBufferingOn, stack.RouteBufferingOn
		}, "groups.proxy: no selectors", true},
		{"bad selector", func(c *Config, _ *lab.Options) { c.External.Groups["app"] = []string{"tree:x"} }, `"tree:x"`, true},
		{"unseen", func(c *Config, _ *lab.Options) { c.External.Groups, c.External.Unseen = nil, true }, "external.unseen: slow-client measures the stack's processes", false},
		{"unseen with groups", func(c *Config, _ *lab.Options) { c.External.Unseen = true }, "external.unseen: the processes are not on this machine; give no groups", true},
		{"limits", func(c *Config, _ *lab.Options) { c.Limits["app"] = lab.LimitSpec{CPU: 1} }, "the external stack applies none", true},
		{"https", func(c *Config, _ *lab.Options) { c.External.LargeURL = "https://127.0.0.1:1/large" }, `scheme "https" not supported`, true},
		{"http2", func(c *Config, _ *lab.Options) {
			c.External.HTTP2, c.External.LargeURL = true, "https://127.0.0.1:1/large"
		}, "external.http2: slow-client speaks HTTP/1.1 to the stack", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := good
			ext.Groups = map[string][]string{"app": {self}}
			c := externalConfig(ext, cond)
			var o lab.Options
			tc.edit(c, &o)
			b, err := lab.MarshalScenario(c)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := lab.ParseScenario(b)
			if tc.inScen != (err != nil) {
				t.Errorf("scenario validation: %v, want an error: %v", err, tc.inScen)
			}
			if err == nil {
				err = o.Validate()
			}
			if err == nil {
				_, err = o.Env(parsed, io.Discard)
			}
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}

	// The good one passes, says what it found, and remote URLs pass
	// with --allow-remote (nothing is sent: only the check runs).
	var note bytes.Buffer
	if _, err := (lab.Options{}).Env(externalConfig(good, cond), &note); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note.String(), "nothing started, no limits applied") || !strings.Contains(note.String(), "app: cgroup /") {
		t.Errorf("note: %q", note.String())
	}
	remote := good
	remote.FastURL = "http://192.0.2.1/fast"
	if _, err := (lab.Options{AllowRemote: true}).Env(externalConfig(remote, cond), io.Discard); err != nil {
		t.Errorf("remote URL with --allow-remote: %v", err)
	}
}

// TestExternalStackMatchesManaged points the external stack at Gunicorn
// sync-2 behind NGINX (buffering on) that the test starts itself under
// the published limits, directly at the app and through the proxy, and
// compares each with the managed real stack's run of the same condition:
// the starved direct p95 within run-to-run noise, the buffered one
// unstarved with the proxy's temp files seen through the user's temp
// dir, and the limits found in the cgroups recorded.
func TestExternalStackMatchesManaged(t *testing.T) {
	slowlabtest.Timing(t)
	direct := Condition{stack.RouteDirect, "sync-2", 2}
	buffered := Condition{stack.RouteBufferingOn, "sync-2", 2}
	managed := conditions(run(t, small(direct, buffered), testEnv(t, stack.NameReal)))

	slowlabtest.NothingLeft(t)
	running := labtest.StartOwn(t, stack.NameReal, stack.RouteBufferingOn, "sync-2", int64(small().Large.Size))
	app := "cgroup:/" + running.Cgroup("app").Path()
	proxy := "cgroup:/" + running.Cgroup("proxy").Path()
	cases := []struct {
		cond Condition
		ext  lab.ExternalSpec
	}{
		{direct, lab.ExternalSpec{FastURL: "http://" + running.AppAddr() + "/fast", LargeURL: "http://" + running.AppAddr() + "/large",
			Route: stack.RouteDirect, Server: "sync-2", Groups: map[string][]string{"app": {app}}}},
		{buffered, lab.ExternalSpec{FastURL: running.URL() + "/fast", LargeURL: running.URL() + "/large",
			Route: stack.RouteBufferingOn, Server: "sync-2", Groups: map[string][]string{"app": {app}, "proxy": {proxy}},
			TempDirs: running.TempDirs()}},
	}
	got := map[string]recorder.Condition{}
	for _, tc := range cases {
		out := t.TempDir()
		res := runExternal(t, externalConfig(tc.ext, tc.cond), out)
		for k, v := range conditions(res) {
			got[k] = v
		}
		env, _ := os.ReadFile(filepath.Join(out, "environment.json"))
		for _, want := range []string{`"stack": "external"`, "none applied by slowlab", "app: cgroup " + strings.TrimPrefix(app, "cgroup:") + " 0.25 CPU / 128 MiB"} {
			if !strings.Contains(string(env), want) {
				t.Errorf("%s: environment.json lacks %q:\n%s", tc.cond.Route, want, env)
			}
		}
		checkExternalRuns(t, out, true)
	}
	m, e := p95(t, managed, "direct/sync-2/2"), p95(t, got, "direct/sync-2/2")
	t.Logf("direct sync-2 2 slow: p95 managed %.0f ms, external %.0f ms", m, e)
	// Both runs are starved: a /fast request waits for a worker behind a
	// slow download, up to the download's app send time. Which of the
	// 40 requests land early in a download decides the p95 (the second
	// slowest) between runs of one stack by up to a third on a loaded
	// machine (892 against 1151 ms seen), so the stacks must agree
	// within half: an external stack that missed the starvation (a p95
	// of tens of ms) or doubled it still fails.
	if e < m/1.5 || e > m*1.5 {
		t.Errorf("direct sync-2 2 slow: external p95 %.0f ms, managed %.0f ms; want within a factor 1.5", e, m)
	}
	mb, eb := managed["proxy-buffering-on/sync-2/2"], got["proxy-buffering-on/sync-2/2"]
	t.Logf("buffering on: p95 managed %.1f ms, external %.1f ms; temp peak %.1f and %.1f MiB", mb.P95MS.Value, eb.P95MS.Value, mb.TempPeakMiB.Value, eb.TempPeakMiB.Value)
	for name, c := range map[string]recorder.Condition{"managed": mb, "external": eb} {
		// The starved direct p95 is the download time, seconds; a buffering
		// proxy takes the body off the app in a fraction of that, so the
		// typical /fast request never waits for it. The median of the
		// run's 40 requests tells that shape; its p95 (the second
		// slowest) is one request's luck on a loaded machine.
		if !c.P50MS.Valid || c.P50MS.Value > m/10 || c.TempPeakMiB.Value < 5 {
			t.Errorf("%s buffering on 2 slow: p50 %v ms (p95 %v), temp peak %v MiB; want a median under a tenth of the starved p95 %.0f ms, over 5 MiB", name, c.P50MS, c.P95MS, c.TempPeakMiB, m)
		}
	}
}

// TestExternalStackNode points the external stack at a Node.js app the
// test starts (one process, no proxy): the slow readers do not starve it,
// as on the managed stack, and its processes are found by their tree.
func TestExternalStackNode(t *testing.T) {
	slowlabtest.Timing(t)
	cond := Condition{stack.RouteDirect, "node-1", 2}
	managed := conditions(run(t, small(cond), testEnv(t, stack.NameReal)))
	slowlabtest.NothingLeft(t)
	running := labtest.StartOwn(t, stack.NameReal, stack.RouteDirect, "node-1", int64(small().Large.Size))
	ext := lab.ExternalSpec{FastURL: running.URL() + "/fast", LargeURL: running.URL() + "/large", Server: "node-1",
		Groups: map[string][]string{"app": {"tree:" + strconv.Itoa(running.PIDs()["app"])}}}
	out := t.TempDir()
	got := conditions(runExternal(t, externalConfig(ext, cond), out))
	m, e := p50(t, managed, "direct/node-1/2"), p50(t, got, "direct/node-1/2")
	t.Logf("node-1 2 slow: p50 managed %.1f ms, external %.1f ms", m, e)
	// Starved, /fast requests sent through the download would wait for
	// its end: the median about half a download (1 s of the config's 2 s).
	// An event loop is not starved, though under its 0.25 CPU on a loaded
	// machine it answered in 127 ms (median) once, and in 493 ms on a CI
	// machine that ran everything 3.5 times slower than this one: the
	// bound is a third of the download, under the starved median.
	c := small(cond)
	download := 1000 * float64(c.Large.Size) / float64(c.SlowReader.ReadRate)
	for name, v := range map[string]float64{"managed": m, "external": e} {
		if v >= download/3 {
			t.Errorf("%s node-1 2 slow: p50 %.1f ms, want < %.0f, a third of the %.0f ms download (an event loop is not starved)", name, v, download/3, download)
		}
	}
	checkExternalRuns(t, out, false)
}

// runExternal runs c through the session's stack resolution, as `slowlab
// run` does, into out.
func runExternal(t *testing.T, c *Config, out string) *Result {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	env, err := (lab.Options{Out: out}).Env(c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	env.Progress = io.Discard
	return run(t, c, env)
}

// checkExternalRuns: every run ok, its downloads complete without the
// app's send times (the user's app keeps no log of ours), and the user's
// processes sampled: their RSS, and their cgroup's memory when a cgroup:
// selector names it.
func checkExternalRuns(t *testing.T, dir string, byCgroup bool) {
	t.Helper()
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			t.Errorf("run %s: %s %q", r.RunID, r.Status, r.Reason)
		}
		if app := r.Components[0]; !app.RSSPeakBytes.Valid || app.MemoryPeakBytes.Valid != byCgroup {
			t.Errorf("run %s: app RSS %v, cgroup memory %v (by cgroup: %v)", r.RunID, app.RSSPeakBytes, app.MemoryPeakBytes, byCgroup)
		}
	}
	larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, "large-responses.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(larges) == 0 {
		t.Fatal("no downloads recorded")
	}
	for _, l := range larges {
		if l.Outcome != recorder.DownloadComplete || l.AppSendS.Valid {
			t.Errorf("download %s/%d: %s, app_send_s %v; want complete without app_send_s", l.RunID, l.Client, l.Outcome, l.AppSendS)
		}
	}
}
