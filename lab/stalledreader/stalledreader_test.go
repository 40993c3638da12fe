package stalledreader

import (
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Bad input fails Validate with an error naming the field, before
// anything starts.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(c *Config)
	}{
		{"published", "", func(*Config) {}},
		{"no conditions", "conditions: none given", func(c *Config) { c.Conditions = nil }},
		{"give up before stall", "client.give_up 20s: must outlast client.stall (20s)", func(c *Config) { c.Client.GiveUp = c.Client.Stall }},
		{"app timeout past give up", "conditions[0].app_timeout 40s: must be shorter than client.give_up (40s)",
			func(c *Config) { c.Conditions[0].AppTimeout = c.Client.GiveUp }},
		{"send timeout past give up", "conditions[1].send_timeout 1m0s: must be shorter than client.give_up (40s)",
			func(c *Config) { c.Conditions[1].SendTimeout = lab.Duration(time.Minute) }},
		{"send timeout direct", "conditions[0].send_timeout 5s: route direct has no proxy",
			func(c *Config) { c.Conditions[0].SendTimeout = lab.Duration(5 * time.Second) }},
		{"app timeout async", "conditions[6].app_timeout 5s: server async is an event-loop server",
			func(c *Config) { c.Conditions[6].AppTimeout = lab.Duration(5 * time.Second) }},
		{"app timeout uvicorn", "conditions[6].app_timeout 5s: server uvicorn-1 is an event-loop server",
			func(c *Config) {
				c.Conditions[6].Server, c.Conditions[6].AppTimeout = "uvicorn-1", lab.Duration(5*time.Second)
			}},
		{"fractional timeout", "conditions[0].app_timeout 1.5s: allowed 0",
			func(c *Config) { c.Conditions[0].AppTimeout = lab.Duration(1500 * time.Millisecond) }},
		{"mode", `conditions[0].mode "pause"`, func(c *Config) { c.Conditions[0].Mode = "pause" }},
		{"clients", "conditions[0].clients 0: allowed 1 to 100", func(c *Config) { c.Conditions[0].Clients = 0 }},
		{"route", `conditions[0].route "proxy-request-buffering-on"`, func(c *Config) { c.Conditions[0].Route = stack.RouteRequestBufferingOn }},
		{"size", "size 512: allowed 1k to 1g", func(c *Config) { c.Size = 512 }},
		{"size too big", "size 2g: allowed 1k to 1g", func(c *Config) { c.Size = 2 << 30 }},
		{"rate", "client.rate 100: allowed 1k to 1g bytes/s", func(c *Config) { c.Client.Rate = 100 }},
		{"stall after size", "client.stall_after 16m: allowed 0 to less than size (16m)", func(c *Config) { c.Client.StallAfter = c.Size }},
		{"stall", "client.stall 0s: allowed 1s to 1h", func(c *Config) { c.Client.Stall = 0 }},
		{"read size", "client.read_size 0: allowed 1 byte to 16m", func(c *Config) { c.Client.ReadSize = 0 }},
		{"external", "stack external: stalled-reader starts its own stack", func(c *Config) { c.StackSpec.Stack = stack.NameExternal }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Published()
			tc.edit(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %s...", err, tc.want)
			}
		})
	}
}

// --quick validates and keeps a size the user gave.
func TestQuick(t *testing.T) {
	q := Published()
	q.Reduce()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if q.Size != 4<<20 || len(q.Conditions) != 5 {
		t.Errorf("quick: %+v", q)
	}
	own := Published()
	own.Size = 8 << 20
	own.Reduce()
	if own.Size != 8<<20 {
		t.Errorf("--quick replaced the size given: %d", own.Size)
	}
}

// The published scenario prints and reads back as the same configuration.
func TestScenarioRoundTrip(t *testing.T) {
	b, err := lab.MarshalScenario(Published())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := lab.ParseScenario(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	again, err := lab.MarshalScenario(cfg)
	if err != nil || string(again) != string(b) {
		t.Errorf("round trip changed the scenario:\n%s\nthen\n%s", b, again)
	}
}

func TestEnder(t *testing.T) {
	app, send := lab.Duration(10*time.Second), lab.Duration(5*time.Second)
	stalled := func(outcome string, stalledS, resumedS float64) recorder.StalledDownload {
		return recorder.StalledDownload{Outcome: outcome, StalledS: recorder.Some(stalledS), ResumedS: recorder.Some(resumedS), EndS: resumedS + 0.2}
	}
	for _, tc := range []struct {
		name string
		d    recorder.StalledDownload
		cond Condition
		wt   int
		want string
	}{
		{"complete", stalled(recorder.StalledComplete, 1, 21), Condition{Route: stack.RouteDirect}, 0, recorder.EndedByNone},
		{"client bound", stalled(recorder.StalledTimeout, 1, 21), Condition{Route: stack.RouteDirect, AppTimeout: app}, 2, recorder.EndedByClient},
		{"app killed", stalled(recorder.StalledTruncated, 1, 21), Condition{Route: stack.RouteDirect, AppTimeout: app}, 2, recorder.EndedByAppTimeout},
		{"send first", stalled(recorder.StalledTruncated, 1, 21), Condition{Route: stack.RouteBufferingOff, AppTimeout: app, SendTimeout: send}, 2, recorder.EndedBySendTimeout},
		{"app first", stalled(recorder.StalledTruncated, 8, 28), Condition{Route: stack.RouteBufferingOff, AppTimeout: app, SendTimeout: send}, 2, recorder.EndedByAppTimeout},
		{"send only", stalled(recorder.StalledTruncated, 1, 21), Condition{Route: stack.RouteBufferingOn, AppTimeout: app, SendTimeout: send}, 0, recorder.EndedBySendTimeout},
		{"stall too short", stalled(recorder.StalledTruncated, 1, 3), Condition{Route: stack.RouteBufferingOn, SendTimeout: send}, 0, recorder.EndedByUnknown},
		{"nothing", stalled(recorder.StalledReset, 1, 21), Condition{Route: stack.RouteDirect}, 0, recorder.EndedByUnknown},
	} {
		if got := ender(tc.d, tc.cond, tc.wt); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
