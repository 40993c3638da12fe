package h2slowclient

import (
	"context"
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

// TestMain lets the lab start this test binary as its children (the
// embedded app and proxy).
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// Bad input fails Validate with a clear error before anything starts.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		err    string
	}{
		{"direct route", func(c *Config) { c.Conditions[0].Route = stack.RouteDirect },
			`conditions[0].route "direct": allowed h2-proxy-buffering-off, h2-proxy-buffering-on, h2-tls-proxy-buffering-off, h2-tls-proxy-buffering-on, caddy-tls: the app servers (Gunicorn among them) speak HTTP/1.1`},
		{"protocol", func(c *Config) { c.Conditions[0].Protocol = "h4" }, `conditions[0].protocol "h4": allowed h2 (HTTP/2) or h3 (HTTP/3 over QUIC, on a TLS route)`},
		{"h3 in the clear", func(c *Config) { c.Conditions[0].Protocol = ProtocolH3 },
			`conditions[0].protocol h3 on route "h2-proxy-buffering-off": HTTP/3 is QUIC, always TLS: allowed on h2-tls-proxy-buffering-off, h2-tls-proxy-buffering-on, caddy-tls`},
		{"HTTP/1.1 route", func(c *Config) { c.Conditions[1].Route = stack.RouteBufferingOff }, `conditions[1].route "proxy-buffering-off": allowed`},
		{"window 0", func(c *Config) { c.Slow.StreamWindow = 0 }, "slow.stream_window 0: allowed 1 to 2147483647 (2^31-1) bytes"},
		{"window over 2^31-1", func(c *Config) { c.Slow.StreamWindow = 1 << 31 }, "slow.stream_window 2147483648: allowed 1 to 2147483647"},
		{"connection window", func(c *Config) { c.Slow.ConnWindow = 1000 }, "slow.conn_window 1000: allowed 65535 (the protocol's initial window)"},
		{"streams", func(c *Config) { c.Conditions[0].Streams = 0 }, "conditions[0].streams 0: allowed 1 to 200"},
		{"condition's connection window", func(c *Config) { c.Conditions[2].ConnWindow = 1 << 31 },
			"conditions[2].conn_window 2147483648: allowed 0 (slow.conn_window) or 65535"},
		{"conns", func(c *Config) { c.Conditions[0].Conns = "two" }, `conditions[0].conns "two": allowed one`},
		{"fast", func(c *Config) { c.Conditions[0].Fast = "own" }, `conditions[0].fast "own": allowed separate`},
		{"read", func(c *Config) { c.Conditions[0].Read = "slow" }, `conditions[0].read "slow": allowed paced`},
		{"send timeout", func(c *Config) { c.Conditions[0].SendTimeout = lab.Duration(1500 * time.Millisecond) },
			"conditions[0].send_timeout 1.5s: allowed 0 (the proxy's 60s) or whole seconds"},
		{"server", func(c *Config) { c.Conditions[0].Server = "sync-0" }, "conditions[0].server"},
		{"rate", func(c *Config) { c.Slow.Rate = 0 }, "slow.rate 0: allowed 1 or more"},
		{"no conditions", func(c *Config) { c.Conditions = nil }, "conditions: none given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Published()
			tc.change(c)
			if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("Validate: %v, want %q", err, tc.err)
			}
		})
	}
	if err := Published().Validate(); err != nil {
		t.Errorf("the published matrix: %v", err)
	}
	// The HTTP/3 column's window check names the condition and the minimum.
	c := Published()
	c.Slow.StreamWindow = 1000
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "protocol h3 with slow.stream_window 1000") ||
		!strings.Contains(err.Error(), "HTTP/3 needs each at least 4096 bytes") {
		t.Errorf("h3 with a 1000-byte stream window: %v", err)
	}
}

// shortConfig is the published scenario with 3 s of /fast at 10/s and
// the given conditions, once.
func shortConfig(conds ...Condition) *Config {
	c := Published()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(3*time.Second)
	c.Conditions = conds
	return c
}

// TestShape, on both stacks: paced slow streams on one HTTP/2 connection
// to the proxy. With buffering off each stream is an upstream connection
// and so a worker: eight hold min(8, 2) = both sync-2 workers and /fast
// on its own connection waits seconds. With buffering on the proxy takes
// every response whole (four of 16 MiB: the app's 0.25 CPU writing
// eight on the real stack put /fast's p95 at half a second) and /fast
// stays fast. Over TLS (h2 by ALPN, the run's certificate) as in the
// clear.
func TestShape(t *testing.T) {
	slowlabtest.Timing(t)
	for _, name := range []string{stack.NameEmbedded, stack.NameReal} {
		t.Run(name, func(t *testing.T) {
			c := shortConfig(Condition{Route: stack.RouteH2BufferingOff, Server: "sync-2", Streams: 8},
				Condition{Route: stack.RouteH2BufferingOn, Server: "sync-2", Streams: 4},
				Condition{Route: stack.RouteH2TLSBufferingOff, Server: "sync-2", Streams: 8})
			env := labtest.Env(t, name)
			res, err := c.Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			conds := Summarize(res.(*Result).Runs)
			if len(conds) != 3 {
				t.Fatalf("%d conditions: %+v", len(conds), conds)
			}
			off, on, tlsOff := conds[0], conds[1], conds[2]
			for _, cond := range conds {
				t.Logf("%s: app held %v, handed over %d whole; proxy memory %v MiB, temp %v MiB; /fast %d/%d p95 %v ms", cond.Route, cond.AppHeldMax,
					cond.AppComplete, cond.ProxyMemPeakMiB, cond.TempPeakMiB, cond.FastOK, cond.FastPlanned, cond.P95MS)
			}
			if off.Runs != 1 || off.AppHeldMax.Value != 2 || off.AppComplete != 0 || off.P95MS.Value < 1000 {
				t.Errorf("buffering off: %+v, want both workers held by the streams (app held 2, none handed over) and /fast starved", off)
			}
			if on.Runs != 1 || on.AppComplete != 4 || on.P95MS.Value >= 1000 {
				t.Errorf("buffering on: %+v, want all 4 responses handed over to the proxy and /fast not starved", on)
			}
			// Over TLS the same: the proxy's certificate made for the run,
			// trusted by the run's clients.
			if tlsOff.Route != string(stack.RouteH2TLSBufferingOff) || tlsOff.Runs != 1 || tlsOff.AppHeldMax.Value != 2 || tlsOff.AppComplete != 0 {
				t.Errorf("TLS, buffering off: %+v, want both workers held by the streams, none handed over", tlsOff)
			}
			checkFastStreams(t, env.Out, "HTTP/2", 2, 1)
		})
	}
}

// TestStalledStreamReset, on both stacks: two streams stalled with their
// windows closed behind a 1 s send_timeout are reset by the proxy once it
// passed (not at the end of the 3.25 s hold), buffering off and on; with
// buffering off they held both workers until then.
func TestStalledStreamReset(t *testing.T) {
	slowlabtest.Timing(t)
	for _, name := range []string{stack.NameEmbedded, stack.NameReal} {
		t.Run(name, func(t *testing.T) {
			send := lab.Duration(time.Second)
			c := shortConfig(Condition{Route: stack.RouteH2BufferingOff, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: send},
				Condition{Route: stack.RouteH2BufferingOn, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: send})
			res, err := c.Run(context.Background(), labtest.Env(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, cond := range Summarize(res.(*Result).Runs) {
				t.Logf("%s: %d reset after %v s, app held %v; /fast p95 %v ms", cond.Route, cond.Reset, cond.ResetAfterS, cond.AppHeldMax, cond.P95MS)
				if cond.Runs != 1 || cond.Reset != 2 || cond.ResetAfterS.Value < 1 || cond.ResetAfterS.Value >= c.Hold().Seconds() {
					t.Errorf("%s: %+v, want both streams reset by the proxy after its 1 s send_timeout, before the hold's end", cond.Route, cond)
				}
				if cond.Route == string(stack.RouteH2BufferingOff) && cond.AppHeldMax.Value != 2 {
					t.Errorf("buffering off: app held %v, want both workers held by the stalled streams", cond.AppHeldMax)
				}
			}
		})
	}
}

// checkFastStreams: requests.csv has each run's /fast requests as streams
// of one connection: protocol proto (HTTP/2 or HTTP/3), one conn a run, no
// stream ID twice and each a client's (HTTP/2: odd, stream%2 == 1; HTTP/3
// bidirectional: stream%4 == 0).
func checkFastStreams(t *testing.T, dir, proto string, mod, rem int) {
	t.Helper()
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, recorder.FileName[recorder.Request]()))
	if err != nil {
		t.Fatal(err)
	}
	conns, streams := map[string]map[string]bool{}, map[string]map[int]bool{}
	for _, r := range rows {
		if conns[r.RunID] == nil {
			conns[r.RunID], streams[r.RunID] = map[string]bool{}, map[int]bool{}
		}
		if r.Protocol != proto || r.Conn == "" || r.Stream%mod != rem || streams[r.RunID][r.Stream] {
			t.Errorf("%s /fast %d: protocol %q, conn %q, stream %d: want %s streams of their own", r.RunID, r.Seq, r.Protocol, r.Conn, r.Stream, proto)
		}
		conns[r.RunID][r.Conn], streams[r.RunID][r.Stream] = true, true
	}
	if len(conns) == 0 {
		t.Error("requests.csv has no rows")
	}
	for run, c := range conns {
		if len(c) != 1 {
			t.Errorf("%s: /fast on %d connections, want one", run, len(c))
		}
	}
}
