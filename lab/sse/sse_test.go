package sse

import (
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// Bad input fails Validate with a clear error before anything starts.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		err    string
	}{
		{"interval too short", func(c *Config) { c.Stream.Interval = lab.Duration(5 * time.Millisecond) }, "stream.interval 5ms: allowed 10ms to 10s"},
		{"interval too long", func(c *Config) { c.Stream.Interval = lab.Duration(11 * time.Second) }, "stream.interval 11s: allowed 10ms to 10s"},
		{"duration below interval", func(c *Config) { c.Stream.Duration = lab.Duration(50 * time.Millisecond) }, "stream.duration 50ms: allowed one interval (100ms) to 5m0s"},
		{"duration too long", func(c *Config) { c.Stream.Duration = lab.Duration(6 * time.Minute) }, "stream.duration 6m0s: allowed one interval (100ms) to 5m0s"},
		{"pad too large", func(c *Config) { c.Stream.Pad = 65537 }, "stream.pad 65537: allowed 0 to 64k bytes"},
		{"negative pad", func(c *Config) { c.Stream.Pad = -1 }, "stream.pad -1: allowed 0 to 64k bytes"},
		{"timeout shorter than a stream", func(c *Config) { c.Stream.Timeout = lab.Duration(5 * time.Second) }, "stream.timeout 5s: must be longer than stream.duration 10s"},
		{"path", func(c *Config) { c.Stream.Path = "events" }, `stream.path "events": must start with /`},
		{"unknown route", func(c *Config) { c.Conditions[0].Route = "proxy-buffering-maybe" },
			`conditions[0].route "proxy-buffering-maybe": allowed direct, proxy-buffering-off, proxy-buffering-on, proxy-buffering-on-accel-no, proxy-buffering-on-http10, proxy-buffering-on-http10-accel-no, proxy-buffering-off-http10-accel-yes`},
		{"upload route", func(c *Config) { c.Conditions[0].Route = stack.RouteRequestBufferingOn }, `conditions[0].route "proxy-request-buffering-on": allowed`},
		{"streams", func(c *Config) { c.Conditions[1].Streams = -1 }, "conditions[1].streams -1: allowed 0 to 1000"},
		{"server", func(c *Config) { c.Conditions[0].Server = "sync-0" }, "conditions[0].server"},
		{"no conditions", func(c *Config) { c.Conditions = nil }, "conditions: none given"},
		{"fast", func(c *Config) { c.Fast.Rate = 0 }, "fast.rate 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Published()
			tc.change(c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("error %v, want %s...", err, tc.err)
			}
		})
	}
}

// The published matrix and --quick's both validate; --quick runs each
// route on sync-2, gthread and async once with shorter streams, and
// keeps a duration the user gave.
func TestPublishedAndQuick(t *testing.T) {
	if err := Published().Validate(); err != nil {
		t.Fatal(err)
	}
	q := Published()
	q.Reduce()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(q.Conditions) != 8 || q.Reps != 1 || q.Stream.Duration != lab.Duration(4*time.Second) {
		t.Errorf("quick: %+v", q)
	}
	own := Published()
	own.Stream.Duration = lab.Duration(2 * time.Second)
	own.Reduce()
	if own.Stream.Duration != lab.Duration(2*time.Second) {
		t.Errorf("--quick replaced the duration given: %v", own.Stream.Duration)
	}
	st, _, err := stack.Lookup(stack.NameEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	runs, skipped := q.Runs(st)
	if len(runs) != 8 || len(skipped) != 0 || runs[3].ID() != "proxy-buffering-on-accel-no.sync-2.s2.rep1" ||
		runs[4].ID() != "proxy-buffering-on-http10.sync-2.s2.rep1" || runs[5].ID() != "proxy-buffering-on-http10-accel-no.sync-2.s2.rep1" ||
		runs[7].Server.Name() != "async" {
		t.Errorf("runs %v, skipped %v", runs, skipped)
	}
	if got := q.Routes(); got[3] != stack.RouteBufferingOn || got[4] != stack.RouteBufferingOn || got[5] != stack.RouteBufferingOn {
		t.Errorf("accel-no and the http10 routes deploy %v, want proxy-buffering-on", got[3:6])
	}
}

// Each route's deployment, HTTP version and X-Accel-Buffering.
func TestPseudoRoutes(t *testing.T) {
	c := Published()
	for _, tc := range []struct {
		route, deploy stack.Route
		http10        bool
		accel         string
	}{
		{stack.RouteDirect, stack.RouteDirect, false, ""},
		{stack.RouteBufferingOff, stack.RouteBufferingOff, false, ""},
		{stack.RouteBufferingOn, stack.RouteBufferingOn, false, ""},
		{RouteAccelNo, stack.RouteBufferingOn, false, "no"},
		{RouteHTTP10, stack.RouteBufferingOn, true, ""},
		{RouteHTTP10AccelNo, stack.RouteBufferingOn, true, "no"},
		{RouteHTTP10AccelYes, stack.RouteBufferingOff, true, "yes"},
	} {
		if d, h, a := deployed(tc.route), pseudo[tc.route].http10, c.Params(tc.route).Accel; d != tc.deploy || h != tc.http10 || a != tc.accel {
			t.Errorf("%s: deploys %s, HTTP/1.0 %v, accel %q; want %s, %v, %q", tc.route, d, h, a, tc.deploy, tc.http10, tc.accel)
		}
	}
	if len(Routes) != 7 {
		t.Errorf("%d routes, the table above covers 7", len(Routes))
	}
}
