package slowclient

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

func TestPublishedIsThePublishedMatrix(t *testing.T) {
	c := Published()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	runs := c.Runs()
	if len(runs) != 30 {
		t.Fatalf("%d runs, want 27 + 3 gthread", len(runs))
	}
	ids := map[string]bool{}
	for _, r := range runs {
		if ids[r.ID()] {
			t.Errorf("duplicate run id %s", r.ID())
		}
		ids[r.ID()] = true
	}
	last := c.Conditions[len(c.Conditions)-1]
	if last.Server != "gthread-1x4" || last.Route != stack.RouteDirect || last.SlowClients != 2 {
		t.Errorf("auxiliary condition %+v", last)
	}
	if d := c.Duration(2); d != 9250*time.Millisecond {
		t.Errorf("intrinsic duration %s, want 9.25s (fast schedule outlasts 8 s downloads)", d)
	}
	if c.Stack().Stack != stack.NameAuto || c.Stack().Limits["app"].CPU != 0.25 {
		t.Errorf("stack spec %+v: want auto under the published limits", c.Stack())
	}
}

// Backpressure off is a query on the download's path, and allowed only
// where every server's app serves it.
func TestBackpressureOff(t *testing.T) {
	slowlabtest.Timing(t)
	if got := (LargeSpec{Path: "/large"}).url(); got != "/large" {
		t.Errorf("default: %s", got)
	}
	if got := (LargeSpec{Path: "/large", Backpressure: "off"}).url(); got != "/large?backpressure=off" {
		t.Errorf("off: %s", got)
	}
	if got := (LargeSpec{Path: "/large?size=1", Backpressure: "off"}).url(); got != "/large?size=1&backpressure=off" {
		t.Errorf("off with a query: %s", got)
	}
	c := Published()
	c.Conditions = []Condition{{stack.RouteDirect, "node-2", 8}, {stack.RouteBufferingOn, "uvicorn-2", 8}}
	c.Large.Backpressure = "off"
	if err := c.Validate(); err != nil {
		t.Errorf("node and uvicorn with backpressure off: %v", err)
	}
	if m := stack.BackpressureOffModels(); !slices.Contains(m, "node") || !slices.Contains(m, "uvicorn") || slices.Contains(m, "sync") {
		t.Errorf("BackpressureOffModels() = %v", m)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Conditions = nil }, "conditions: none given"},
		{func(c *Config) { c.Conditions[0].Route = "sideways" }, `conditions[0].route "sideways": allowed direct, proxy-buffering-off, proxy-buffering-on, apache-default, apache-iobuffer, caddy-default, caddy-buffer-response, caddy-buffer-request, haproxy-default, haproxy-buffer-request`},
		{func(c *Config) { c.Conditions[1].Server = "sync-0" }, `conditions[1].server "sync-0": allowed ` + stack.ModelSyntax()},
		{func(c *Config) { c.Conditions[1].Server = "async-2" }, `conditions[1].server "async-2": allowed ` + stack.ModelSyntax()},
		{func(c *Config) { c.Conditions[2].SlowClients = -1 }, "conditions[2].slow_clients -1: allowed 0 to 1000"},
		{func(c *Config) { c.Fast.Rate = 0 }, "fast.rate 0: allowed more than 0 up to 10000 requests/s"},
		{func(c *Config) { c.Fast.Duration = 0 }, "fast.duration 0s: must be more than 0"},
		{func(c *Config) { c.SlowReader.ReadRate = 0 }, "slow_reader.read_rate 0: allowed 1k to 1g bytes/s"},
		{func(c *Config) { c.Large.Size = 2 << 30 }, "large.size 2g: allowed 0 to 1g"},
		{func(c *Config) { c.Large.Backpressure = "maybe" }, `large.backpressure "maybe": allowed on, off`},
		{func(c *Config) { c.Large.Backpressure = "off" }, `conditions[0].server "sync-2": large.backpressure off needs an app that can write without waiting for the socket (` +
			strings.Join(stack.BackpressureOffModels(), ", ") + ")"},
	} {
		c := Published()
		tc.mod(c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// TestLateGenerator: a run whose load generator started a request late
// is named under the table; runs on time, and failed runs, are not.
func TestLateGenerator(t *testing.T) {
	run := func(server string, lag float64, status string) recorder.Run {
		return recorder.Run{Route: "direct", Server: server, SlowClients: 32, Status: status, MaxScheduleLagMS: recorder.Some(lag)}
	}
	if note := lateGenerator([]recorder.Run{run("node-2", 12, recorder.RunOK), run("node-2", 900, recorder.RunFailed)}); note != "" {
		t.Errorf("on time: %q", note)
	}
	note := lateGenerator([]recorder.Run{run("node-2", 12, recorder.RunOK), run("node-2", 507.6, recorder.RunOK), run("gevent-2x100", 614.7, recorder.RunOK)})
	for _, want := range []string{"in 2 of 3 ok runs", "up to 615 ms", "direct node-2 32 slow, direct gevent-2x100 32 slow"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
}

func TestPrintConditions(t *testing.T) {
	var b bytes.Buffer
	PrintConditions(&b, []recorder.Condition{
		{Route: "direct", Server: "sync-2", SlowClients: 2, Runs: 3, RunsExcluded: 1, P50MS: recorder.Some(2500), P95MS: recorder.Some(5932.86),
			P95MinMS: recorder.Some(5800), P95MaxMS: recorder.Some(6000), AppSendS: recorder.Some(6.5), ClientReceiveS: recorder.Some(8.01),
			AppMemoryPeakMiB: recorder.Some(41.25)},
	}, []recorder.Run{
		// The condition's ok runs count; a failed run and another
		// condition's run do not.
		{Route: "direct", Server: "sync-2", SlowClients: 2, Status: recorder.RunOK, FastOK: 70, FastTotal: 72, Components: [3]recorder.ComponentSummary{{RSSPeakBytes: recorder.Some(30 << 20)}}},
		{Route: "direct", Server: "sync-2", SlowClients: 2, Status: recorder.RunOK, FastOK: 72, FastTotal: 72, Components: [3]recorder.ComponentSummary{{RSSPeakBytes: recorder.Some(33.5 * (1 << 20))}}},
		{Route: "direct", Server: "sync-2", SlowClients: 2, Status: recorder.RunFailed, FastOK: 1, FastTotal: 72, Components: [3]recorder.ComponentSummary{{RSSPeakBytes: recorder.Some(90 << 20)}}},
		{Route: "direct", Server: "sync-2", SlowClients: 0, Status: recorder.RunOK, FastOK: 5, FastTotal: 72, Components: [3]recorder.ComponentSummary{{RSSPeakBytes: recorder.Some(80 << 20)}}},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "route") || !strings.Contains(lines[0], "excluded") ||
		!strings.Contains(lines[1], "5932.9") || !strings.Contains(lines[1], " 142/144 ") || !strings.Contains(lines[1], "5800.0-6000.0") ||
		!strings.HasSuffix(lines[0], "temp_peak_mib app_mem_mib app_rss_mib proxy_mem_mib") || !regexp.MustCompile(` +- +41\.2 +33\.5 +-$`).MatchString(lines[1]) {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestSlowLoadFlagsValidated: the slow-load child checks its slow readers
// by the same rules as the scenario's slow_reader:, naming its flags.
func TestSlowLoadFlagsValidated(t *testing.T) {
	slowlabtest.Timing(t)
	ok := slowLoad{largeURL: "http://127.0.0.1:1/large", fastURL: "http://127.0.0.1:1/fast", runID: "r", slow: 2,
		rcvBuf: 8 << 10, readSize: 16 << 10, readRate: 2 << 20, slowTimeout: time.Minute, fastTimeout: time.Second,
		fastInterval: 100 * time.Millisecond, fastFor: time.Second}
	if _, err := parseSlowLoad(ok.args()[1:]); err != nil {
		t.Fatalf("published settings: %v", err)
	}
	for _, tc := range []struct {
		edit func(*slowLoad)
		want string
	}{
		{func(l *slowLoad) { l.readRate = 512 }, CmdSlowLoad + ": --read-rate 512: allowed 1k to 1g bytes/s"},
		{func(l *slowLoad) { l.readSize = 0 }, CmdSlowLoad + ": --read-size 0: allowed 1 byte to 16m"},
		{func(l *slowLoad) { l.rcvBuf = 65 << 20 }, CmdSlowLoad + ": --rcvbuf 65m: allowed 0 (the kernel's) to 64m"},
		{func(l *slowLoad) { l.slowTimeout = 2 * time.Hour }, CmdSlowLoad + ": --slow-timeout 2h0m0s: allowed up to 1h"},
	} {
		l := ok
		tc.edit(&l)
		if _, err := parseSlowLoad(l.args()[1:]); err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %s", err, tc.want)
		}
	}
}
