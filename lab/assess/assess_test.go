package assess

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestDegraded feeds the rule windows on each side of each condition.
func TestDegraded(t *testing.T) {
	base := 3 * time.Millisecond
	for _, tc := range []struct {
		name string
		w    Window
		want string // "" held, else a substring of the reason
	}{
		{"typical", Window{Sent: 25, OK: 25, P95: 4 * time.Millisecond}, ""},
		{"over 10x but under base+500ms", Window{Sent: 25, OK: 25, P95: 400 * time.Millisecond}, ""},
		{"at the threshold", Window{Sent: 25, OK: 25, P95: 503 * time.Millisecond}, ""},
		{"over both", Window{Sent: 25, OK: 25, P95: 504 * time.Millisecond}, "p95 504.0 ms over 503.0 ms"},
		{"one failure", Window{Sent: 25, OK: 24, Failed: 1, P95: time.Millisecond, FirstError: "timeout"}, "1 of 25 /fast requests failed (timeout)"},
		{"nothing sent", Window{}, "no /fast request"},
	} {
		got := Degraded(base, tc.w)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Degraded = %q, want %q", tc.name, got, tc.want)
		}
	}
	// A slow baseline: 10x rules, not +500 ms.
	if got := Degraded(100*time.Millisecond, Window{Sent: 25, OK: 25, P95: 900 * time.Millisecond}); got != "" {
		t.Errorf("baseline 100 ms, p95 900 ms: %q, want held (under 10x)", got)
	}
}

// TestSummarizeCountsFailuresNotUnsent: a row never sent (interrupted) is
// not counted; a 5xx and an error are failures, not latencies.
func TestSummarizeCountsFailuresNotUnsent(t *testing.T) {
	slowlabtest.Timing(t)
	rows := []recorder.Request{
		{Status: 200, LatencyMS: 2}, {Status: 200, LatencyMS: 4}, {Status: 503, LatencyMS: 1},
		{Error: "timeout"}, {Error: recorder.NotSentPrefix + ": stopped"},
	}
	w := summarize(rows)
	if w.Sent != 4 || w.OK != 2 || w.Failed != 2 || w.P95 != 4*time.Millisecond || w.FirstError != "status 503" {
		t.Errorf("summarize = %+v, want 4 sent, 2 ok, 2 failed, p95 4ms, first error status 503", w)
	}
}

func TestParseFailOn(t *testing.T) {
	got, err := ParseFailOn(" slow-readers<8, idle<100 ")
	if err != nil || len(got) != 2 || got[0] != (Bound{ProbeSlowReaders, 8}) || got[1] != (Bound{ProbeIdle, 100}) {
		t.Fatalf("ParseFailOn = %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"slow-readers":                "want PROBE<N",
		"slow-reader<8":               `unknown probe "slow-reader"`,
		"idle<0":                      "from 1 to 1024",
		"idle<x":                      "from 1 to 1024",
		"idle<2000":                   "from 1 to 1024",
		"idle<2,idle<3":               "idle given twice",
		"slow-readers<8,,slowloris<2": "want PROBE<N",
	} {
		if _, err := ParseFailOn(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFailOn(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func intp(n int) *int { return &n }

// TestValidateRefuses: each bad setting is named before anything starts.
func TestValidateRefuses(t *testing.T) {
	for want, mutate := range map[string]func(c *Config){
		"max_clients 0":              func(c *Config) { c.MaxClients = 0 },
		"max_clients 2000":           func(c *Config) { c.MaxClients = 2000 },
		"window 100ms":               func(c *Config) { c.Window = lab.Duration(100 * time.Millisecond) },
		"want at least 20 for a p95": func(c *Config) { c.FastRate, c.Window = 5, lab.Duration(time.Second) },
		"large_size 512k":            func(c *Config) { c.LargeSize = 512 << 10 },
		"socket buffers absorb":      func(c *Config) { c.LargeSize = 512 << 10 },
		"server":                     func(c *Config) { c.Server = "sync" },
		`route "proxy"`:              func(c *Config) { c.Route = "proxy" },
		"probes: slow-readers speaks HTTP/1.1 and route h2-proxy-buffering-off speaks HTTP/2": func(c *Config) { c.Route = stack.RouteH2BufferingOff },
		"probes: held-streams speaks HTTP/1.1 and route h2-tls-proxy-buffering-on speaks HTTP/2": func(c *Config) {
			c.Route, c.Probes = stack.RouteH2TLSBufferingOn, []Probe{ProbeH2SlowStreams, ProbeHeldStreams}
		},
		"probes: h2-slow-streams speaks HTTP/2 and route direct speaks HTTP/1.1": func(c *Config) { c.Probes = []Probe{ProbeIdle, ProbeH2SlowStreams} },
		"probes: h2-streams-one-conn speaks HTTP/2 and the external stack speaks HTTP/1.1": func(c *Config) {
			c.Probes, c.StackSpec.Stack = []Probe{ProbeH2OneConn}, stack.NameExternal
			c.StackSpec.External = &lab.ExternalSpec{FastURL: "http://127.0.0.1:1/fast", Server: "sync-2", Unseen: true}
		},
		"the slow-reader probe wants at least 1m": func(c *Config) {
			c.Route, c.Probes, c.LargeSize = stack.RouteH2BufferingOff, []Probe{ProbeH2OneConn}, 512<<10
		},
		"probes: none":                    func(c *Config) { c.Probes = nil },
		`probes: "slow"`:                  func(c *Config) { c.Probes = []Probe{"slow"} },
		"budget 1s":                       func(c *Config) { c.Budget = lab.Duration(time.Second) },
		"idle_max 0s":                     func(c *Config) { c.IdleMax = 0 },
		`paths.fast "fast": must start`:   func(c *Config) { c.Paths.Fast = "fast" },
		`paths.large "large": must start`: func(c *Config) { c.Paths.Large, c.Paths.Upload = "large", "upload" },
		"probes: idle given twice":        func(c *Config) { c.Probes = []Probe{ProbeIdle, ProbeSlowloris, ProbeIdle} },
		"fail_on:":                        func(c *Config) { c.FailOn = "idle" },
		"idle<4: probe idle is not among the probes run": func(c *Config) { c.Probes, c.FailOn = []Probe{ProbeSlowloris}, "idle<4" },
		"idle<100: over max_clients 64":                  func(c *Config) { c.FailOn = "idle<100" },
		"server_wmem 1m: for an external stack only":     func(c *Config) { c.ServerWmem = 1 << 20 },
		"server_wmem 100: allowed 4k to 1g":              func(c *Config) { external(c, stack.RouteDirect); c.ServerWmem = 100 },
		"server_wmem 2g: allowed 4k to 1g":               func(c *Config) { external(c, stack.RouteDirect); c.ServerWmem = 2 << 30 },
		"server_wmem -1: allowed":                        func(c *Config) { external(c, stack.RouteDirect); c.ServerWmem = -1 },
		"server_wmem 4m: route proxy-buffering-off has a proxy": func(c *Config) {
			external(c, stack.RouteBufferingOff)
			c.ServerWmem = 4 << 20
		},
	} {
		c := Default()
		mutate(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want an error with %q", err, want)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
	c := Default()
	external(c, stack.RouteDirect)
	c.ServerWmem = 4 << 20
	if err := c.Validate(); err != nil {
		t.Errorf("external, direct, server_wmem 4m: %v", err)
	}
	fs := flag.NewFlagSet("assess", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Default().Flags(fs)
	if err := fs.Parse([]string{"--server-wmem", "lots"}); err == nil || !strings.Contains(err.Error(), "-server-wmem") {
		t.Errorf("--server-wmem lots: %v", err)
	}
	// Slow readers not chosen: a small large size is no reason to refuse.
	c = Default()
	c.Probes, c.LargeSize = []Probe{ProbeIdle}, 0
	if err := c.Validate(); err != nil {
		t.Errorf("idle only, large_size 0: %v", err)
	}
}

// external makes c an external stack on route, as ApplyExternal does.
func external(c *Config, route stack.Route) {
	c.StackSpec.Stack = stack.NameExternal
	c.StackSpec.External = &lab.ExternalSpec{FastURL: "http://127.0.0.1:8000/fast", Route: route, Server: c.Server, Unseen: true}
}

// TestApplyExternal: --fast-url makes the external block; the other
// external flags alone are refused.
func TestApplyExternal(t *testing.T) {
	slowlabtest.Timing(t)
	c := Default()
	c.Route = stack.RouteBufferingOn
	c.ext = extFlags{fast: "http://127.0.0.1:8000/fast", large: "http://127.0.0.1:8000/large", app: []string{"port:8000"}, proxy: []string{"comm:nginx"}}
	if err := c.ApplyExternal(); err != nil {
		t.Fatal(err)
	}
	e := c.StackSpec.External
	if c.StackSpec.Stack != stack.NameExternal || e == nil || e.LargeURL != c.ext.large || e.Server != "sync-2" || !e.Route.Proxied() || e.Groups["proxy"][0] != "comm:nginx" {
		t.Errorf("external = %+v (stack %s)", e, c.StackSpec.Stack)
	}
	c = Default()
	c.ext = extFlags{large: "http://127.0.0.1:8000/large"}
	if err := c.ApplyExternal(); err == nil || !strings.Contains(err.Error(), "give --fast-url too") {
		t.Errorf("--large-url alone: %v", err)
	}
	c = Default()
	c.ext = extFlags{fast: "http://127.0.0.1:8000/fast", proxy: []string{"comm:nginx"}}
	if err := c.ApplyExternal(); err == nil || !strings.Contains(err.Error(), "--route proxy-buffering-on or proxy-buffering-off") {
		t.Errorf("--proxy with route direct: %v", err)
	}
	c = Default()
	c.Route, c.ext = stack.RouteBufferingOn, extFlags{fast: "http://127.0.0.1:8000/fast", app: []string{"port:8000"}}
	if err := c.ApplyExternal(); err == nil || !strings.Contains(err.Error(), "give its processes with --proxy") {
		t.Errorf("a proxied route with --app and without --proxy: %v", err)
	}
	// No processes named: they are elsewhere (unseen), whatever the route.
	c = Default()
	c.Route, c.ext = stack.RouteBufferingOn, extFlags{fast: "http://127.0.0.1:8000/fast"}
	if err := c.ApplyExternal(); err != nil || c.StackSpec.External == nil || !c.StackSpec.External.Unseen || len(c.StackSpec.External.Groups) > 0 {
		t.Errorf("no --app, --proxy or --temp-dir: %v, external %+v: want an unseen stack, no groups", err, c.StackSpec.External)
	}
}

// TestHeldByTakesTheLevelsSamples: samples outside the level, or of
// another component, do not count.
func TestHeldByTakesTheLevelsSamples(t *testing.T) {
	s := func(ts float64, comp string, est, sendq float64) recorder.ResourceSample {
		return recorder.ResourceSample{TS: ts, Component: comp, Established: recorder.Some(est), SendQueueBytes: recorder.Some(sendq)}
	}
	samples := []recorder.ResourceSample{s(1, "app", 99, 1<<30), s(2, "app", 3, 1<<20), s(2.5, "app", 4, 2<<20), s(2.6, "loadgen", 50, 0), s(9, "app", 99, 0)}
	h := heldBy(samples, &Level{StartS: 2, EndS: 3})
	if h.AppEstablished == nil || *h.AppEstablished != 4 || *h.AppSendQueueBytes != 2<<20 || h.ProxyTempFiles != nil {
		t.Errorf("heldBy = %+v, want 4 connections, 2 MiB send queues, no proxy", h)
	}
	if !strings.Contains(h.Summary, "app 4 connections") || !strings.Contains(h.Summary, "2.0 MiB") {
		t.Errorf("summary %q", h.Summary)
	}
	if got := heldBy(samples, nil); got.Summary != "" {
		t.Errorf("no level: %+v", got)
	}
}

// TestWriteJSON: assessment.json has the fields the issue names, null for
// a probe that did not degrade.
func TestWriteJSON(t *testing.T) {
	r := &Result{Dir: t.TempDir(), Assessment: Assessment{Verdicts: []Verdict{{Probe: string(ProbeSlowReaders), ClientsToDegrade: intp(2), Fix: "a buffering proxy"}, {Probe: string(ProbeIdle)}}}}
	if err := WriteAssessment(r.Dir, r.Assessment); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir, File))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Probes []map[string]any `json:"probes"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Probes) != 2 || got.Probes[0]["probe"] != "slow-readers" || got.Probes[0]["clients_to_degrade"] != 2.0 ||
		got.Probes[0]["fix"] != "a buffering proxy" || got.Probes[1]["clients_to_degrade"] != nil {
		t.Errorf("assessment.json:\n%s", b)
	}
	if _, ok := got.Probes[1]["clients_to_degrade"]; !ok {
		t.Errorf("clients_to_degrade absent, want null:\n%s", b)
	}
}

// TestPrint: the table has a row per probe ("-" where none degraded, and
// for /fast before where no baseline was measured, as for a probe
// interrupted before it),
// then what held the stack with how its clients ended, the fixes and the
// broken bounds.
func TestPrint(t *testing.T) {
	kept, most := 2.0, 10.0
	r := &Result{Assessment: Assessment{Stack: "real", Server: "sync-2", Route: "direct", TookS: 40, BudgetS: 300, Verdicts: []Verdict{
		{Probe: string(ProbeIdle), ClientsToDegrade: intp(2), Tried: 2, BaselineP95MS: 3, Stopped: "degraded: 50 of 50 /fast requests failed",
			Held: Held{Summary: "app 2 connections"}, Fix: "a proxy", FixDoc: "docs/idle-connections.md", Sure: "confirmed", Windows: 4, HeldInPlace: 1,
			Levels: []Level{{Clients: 1, Status: statusHeld}, {Clients: 2, Status: statusDegraded, Degraded: "50 of 50 failed", FastSent: 50, FastFail: 50},
				{Clients: 1, Status: statusHeld}, {Clients: 2, Status: statusDegraded, Degraded: "50 of 50 failed", FastSent: 50, FastFail: 50,
					Ends: map[string]int{"bound": 2}, HeldP50S: &kept, HeldMaxS: &most}}},
		{Probe: string(ProbeSlowReaders), Tried: 8, BaselineP95MS: 2.5, Stopped: "not degraded with 8", Sure: "held", Windows: 1, HeldInPlace: 8},
		{Probe: string(ProbeSlowloris), Stopped: "interrupted: context canceled"},
	}}}
	r.bounds, _ = ParseFailOn("idle<4")
	var b strings.Builder
	r.Print(&b)
	out := b.String()
	for _, want := range []string{
		"assessed: sync-2 direct on the real stack, 40 s (budget 300 s)",
		"probe        clients to degrade sure/windows held in place tried /fast p95 ms before at failed at stopped",
		"idle                          2 confirmed/4              1     2                 3.0  -     50/50 degraded",
		"slow-readers                  - held/1                   8     8                 2.5  -         - max",
		"slowloris                     - -                        0     0                   -  -         - interrupted",
		"idle, at 2 clients: app 2 connections; clients ended bound 2 (kept 2.0 s median, 10.0 s at most)",
		"fix idle: a proxy (docs/idle-connections.md)",
		"fail-on: broken: idle<4: degraded with 2 (confirmed, 4 windows)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Print lacks %q:\n%s", want, out)
		}
	}
}

// TestCPUBoundFix: a level whose app was throttled for over a quarter of
// it is blamed on the CPU limit, not on the clients; one throttled less
// gets the probe's fix. growth takes the counters' change within the
// level only.
func TestCPUBoundFix(t *testing.T) {
	s := func(ts, cpu, thr float64) recorder.ResourceSample {
		return recorder.ResourceSample{TS: ts, Component: "app", CPUSeconds: recorder.Some(cpu), ThrottledS: recorder.Some(thr)}
	}
	lv := &Level{StartS: 10, EndS: 14}
	busy := heldBy([]recorder.ResourceSample{s(5, 0, 0), s(10, 1, 2), s(12, 1.5, 3), s(14, 2, 4.2), s(20, 9, 9)}, lv)
	if comp, _ := cpuBound(busy); busy.AppCPUS == nil || *busy.AppCPUS != 1 || *busy.AppThrottledS != 2.2 || busy.LevelS != 4 || comp != "app" {
		t.Fatalf("held %+v, want 1 s CPU, 2.2 s throttled of 4: CPU-bound", busy)
	}
	if fix, doc := fixFor(ProbeSlowReaders, stack.RouteBufferingOn, busy); !strings.Contains(fix, "the app's cgroup was throttled 2.2 s of the level's 4.0 s") || doc != "" {
		t.Errorf("fix %q (%s), want the CPU limit blamed", fix, doc)
	}
	idle := heldBy([]recorder.ResourceSample{s(10, 1, 2), s(14, 1.2, 2.5)}, lv)
	if comp, _ := cpuBound(idle); comp != "" {
		t.Errorf("throttled 0.5 s of 4: %+v, want not CPU-bound", idle)
	}
	if fix, doc := fixFor(ProbeSlowReaders, stack.RouteDirect, idle); !strings.Contains(fix, "buffering proxy") || doc != "docs/slow-client.md" {
		t.Errorf("fix %q (%s), want the buffering proxy", fix, doc)
	}
	if one := heldBy([]recorder.ResourceSample{s(11, 1, 2)}, lv); one.AppThrottledS != nil {
		t.Errorf("one sample: %+v, want no growth", one)
	}
	// The proxy throttled more than the app: the proxy is named.
	px := busy
	more := 3.0
	px.ProxyThrottledS = &more
	if comp, thr := cpuBound(px); comp != "proxy" || thr != 3 {
		t.Errorf("CPUBound = %s %v, want proxy 3", comp, thr)
	}
}

// TestSlowReaderFixOnBufferingProxy: behind a buffering proxy that
// spooled the responses the app is not what held /fast; without temp
// files seen the proxy's buffering settings are.
func TestSlowReaderFixOnBufferingProxy(t *testing.T) {
	files, bytes := 8.0, float64(100<<20)
	if fix, _ := fixFor(ProbeSlowReaders, stack.RouteBufferingOn, Held{ProxyTempFiles: &files, ProxyTempBytes: &bytes}); !strings.Contains(fix, "spooled the responses to 8 temp files (100.0 MiB)") {
		t.Errorf("with temp files: %q", fix)
	}
	if fix, doc := fixFor(ProbeSlowReaders, stack.RouteBufferingOn, Held{}); !strings.Contains(fix, "did not take the responses off the app") || doc != "docs/temp-cliff.md" {
		t.Errorf("without: %q (%s)", fix, doc)
	}
}

// TestRouteFlagNamesEveryRoute: --route's help and its refusal of an
// unknown route name every route assess runs, the proxies' own among
// them (caddy-tls, an HTTP/2 route, was taken but named nowhere), and
// each is taken; on caddy-tls the HTTP/2 probes go through and an
// HTTP/1.1 probe is refused, naming the HTTP/2 routes.
func TestRouteFlagNamesEveryRoute(t *testing.T) {
	fs := flag.NewFlagSet("assess", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := Default()
	c.Flags(fs)
	help := fs.Lookup("route").Usage
	refusal := fs.Parse([]string{"--route", "nginx"})
	if refusal == nil {
		t.Fatal("--route nginx: taken")
	}
	routes := slices.Concat(stack.DownloadRoutes(), stack.UploadRoutes, stack.HTTP2Routes())
	if !slices.Contains(routes, stack.RouteCaddyTLS) || !slices.Contains(routes, stack.RouteHAProxyBufferRequest) {
		t.Fatalf("the routes %v lack the proxies' own", routes)
	}
	for _, r := range routes {
		named := regexp.MustCompile(`[\[ ]` + regexp.QuoteMeta(string(r)) + `[\] ]`)
		if !named.MatchString(help) {
			t.Errorf("--route's help does not name %s: %s", r, help)
		}
		if !named.MatchString(refusal.Error()) {
			t.Errorf("--route nginx's refusal does not name %s: %v", r, refusal)
		}
		if err := fs.Parse([]string{"--route", string(r)}); err != nil || c.Route != r {
			t.Errorf("--route %s: %v (route %s)", r, err, c.Route)
		}
	}
	c = Default()
	c.Route, c.Probes = stack.RouteCaddyTLS, slices.Clone(H2DefaultProbes)
	if err := c.Validate(); err != nil {
		t.Errorf("caddy-tls, %v: %v", c.Probes, err)
	}
	c.Probes = []Probe{ProbeSlowReaders}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "route caddy-tls speaks HTTP/2") {
		t.Errorf("caddy-tls, slow-readers: %v", err)
	}
	c.Route = stack.RouteDirect
	c.Probes = []Probe{ProbeH2SlowStreams}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), string(stack.RouteCaddyTLS)) {
		t.Errorf("direct, h2-slow-streams: %v, want the HTTP/2 routes named, caddy-tls among them", err)
	}
}

// TestEndsOrder: the first lines servers sent held clients are said in
// one order, whatever the map's.
func TestEndsOrder(t *testing.T) {
	v := Verdict{Probe: string(ProbeIdle), Levels: []Level{{Clients: 4, Ends: map[string]int{"complete": 4},
		FirstLines: map[string]int{"HTTP/1.1 408 Request Timeout": 1, "HTTP/1.1 400 Bad Request": 2, "HTTP/1.0 503": 1}}}}
	want := `; clients ended complete 4; 1 got "HTTP/1.0 503"; 2 got "HTTP/1.1 400 Bad Request"; 1 got "HTTP/1.1 408 Request Timeout"`
	for range 20 {
		if got := ends(v); got != want {
			t.Fatalf("ends = %s\nwant  %s", got, want)
		}
	}
}
