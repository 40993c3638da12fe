package websocket

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Bad input fails Validate with a clear error before anything starts.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		err    string
	}{
		{"buffering off", func(c *Config) { c.Conditions[0].Route = stack.RouteBufferingOff },
			`conditions[0].route "proxy-buffering-off": allowed direct, proxy-buffering-on (a tunnel does not depend on the proxy's buffering)`},
		{"sockets", func(c *Config) { c.Conditions[1].Sockets = MaxSockets + 1 }, "conditions[1].sockets 1001: allowed 0 to 1000"},
		{"server", func(c *Config) { c.Conditions[0].Server = "sync-0" }, "conditions[0].server"},
		{"no conditions", func(c *Config) { c.Conditions = nil }, "conditions: none given"},
		{"path", func(c *Config) { c.Socket.Path = "ws" }, `socket.path "ws": must start with /`},
		{"ping", func(c *Config) { c.Conditions[2].Ping = lab.Duration(-time.Second) }, "conditions[2].ping -1s: allowed 0 (no pings) to 10m0s"},
		{"read timeout direct", func(c *Config) { c.Conditions[0].ProxyReadTimeout = lab.Duration(time.Second) },
			"conditions[0].proxy_read_timeout 1s: there is no proxy on route direct"},
		{"timeout", func(c *Config) { c.Socket.Timeout = 0 }, "socket.timeout 0s: allowed more than 0 up to 1h"},
		{"proxy read timeout", func(c *Config) { c.Conditions[3].ProxyReadTimeout = lab.Duration(1500 * time.Millisecond) },
			"conditions[3].proxy_read_timeout 1.5s: allowed 0 (the proxy's 60s) or whole seconds from 1s to 1h0m0s"},
		{"fast", func(c *Config) { c.Fast.Rate = 0 }, "fast.rate 0"},
		{"push interval 0", func(c *Config) { c.Socket.Push.Interval = 0 }, "socket.push.interval 0s: allowed 1ms to 10s"},
		{"push message over 16 MiB", func(c *Config) { c.Socket.Push.Pad = 16<<20 + 1 },
			"socket.push.pad 16777217: allowed 0 to 16m bytes (a larger message is refused by every app)"},
		{"push queue", func(c *Config) { c.Socket.Push.Queue = "drop" }, `socket.push.queue "drop": allowed wait`},
		{"mode", func(c *Config) { c.Conditions[0].Mode = "stream" }, `conditions[0].mode "stream": allowed idle (the default) or consume`},
		{"queue on idle", func(c *Config) { c.Conditions[1].Queue = "wait" },
			`conditions[1].queue "wait": only a consume condition has the app push (an idle socket's app queues nothing)`},
		{"queue", func(c *Config) { c.Conditions[1].Mode, c.Conditions[1].Queue = ModeConsume, "drop" }, `conditions[1].queue "drop": allowed wait`},
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
}

// TestShapeEmbedded: on the embedded stack two idle WebSockets hold both
// sync-2 workers for the whole run, directly and through the proxy, so
// /fast waits for the sockets' end (seconds); the async server holds four
// on its event loop and /fast stays fast. Every socket opens and is held
// to the end of its hold, and the app counts them.
func TestShapeEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(2500*time.Millisecond)
	c.Conditions = []Condition{{Route: stack.RouteDirect, Server: "sync-2", Sockets: 2}, {Route: stack.RouteBufferingOn, Server: "sync-2", Sockets: 2},
		{Route: stack.RouteDirect, Server: stack.AsyncServer, Sockets: 4}}
	env := labtest.Env(t, stack.NameEmbedded)
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	conds := Summarize(res.(*Result).Runs)
	if len(conds) != 3 {
		t.Fatalf("%d conditions, want 3: %+v", len(conds), conds)
	}
	for _, cond := range conds {
		t.Logf("%s %s %d: opened %d held %d, app held %v, /fast %d/%d p95 %v ms", cond.Route, cond.Server, cond.Sockets, cond.Opened, cond.Held,
			cond.HeldMax, cond.FastOK, cond.FastPlanned, cond.P95MS)
		if cond.Runs != 1 || cond.Opened != cond.Sockets || cond.Held != cond.Sockets || cond.HeldMax.Value != float64(cond.Sockets) {
			t.Errorf("%s %s: %+v, want every socket opened, held and counted by the app", cond.Route, cond.Server, cond)
		}
		starved := cond.Server == "sync-2"
		if cond.LifetimeP50S.Value < c.Hold().Seconds() {
			t.Errorf("%s %s: sockets lived %v s, want the whole %v s hold", cond.Route, cond.Server, cond.LifetimeP50S, c.Hold().Seconds())
		}
		if got := cond.P95MS.Value > 1000; got != starved {
			t.Errorf("%s %s: /fast p95 %v ms, want starved (seconds) %t", cond.Route, cond.Server, cond.P95MS, starved)
		}
	}
}

// On the real stack sync-2 is Gunicorn, which cannot hold a WebSocket:
// the session is refused before anything starts, naming the models that
// can.
func TestRefusesGunicorn(t *testing.T) {
	c := Published()
	env := labtest.Env(t, stack.NameReal)
	_, err := c.Run(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "server sync-2 on the real stack: gunicorn serves a WSGI app, which cannot hold a WebSocket") ||
		!strings.Contains(err.Error(), "uvicorn") || !strings.Contains(err.Error(), "node") {
		t.Fatalf("Run: %v, want sync-2 refused naming uvicorn and node", err)
	}
}

// TestShapeReal: Uvicorn and Node.js hold four idle WebSockets each on
// one worker, directly and through NGINX, and /fast stays fast: an event
// loop holds a socket with memory, not a worker.
func TestShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(2500*time.Millisecond)
	c.Conditions = []Condition{{Route: stack.RouteDirect, Server: "uvicorn-1", Sockets: 4}, {Route: stack.RouteBufferingOn, Server: "uvicorn-1", Sockets: 4},
		{Route: stack.RouteDirect, Server: "node-1", Sockets: 4}}
	env := labtest.Env(t, stack.NameReal)
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range Summarize(res.(*Result).Runs) {
		t.Logf("%s %s %d: opened %d held %d, app held %v, /fast %d/%d p95 %v ms", cond.Route, cond.Server, cond.Sockets, cond.Opened, cond.Held,
			cond.HeldMax, cond.FastOK, cond.FastPlanned, cond.P95MS)
		if cond.Runs != 1 || cond.Opened != 4 || cond.Held != 4 || cond.HeldMax.Value != 4 || cond.P95MS.Value > 1000 {
			t.Errorf("%s %s: %+v, want 4 sockets held on the event loop and /fast not starved", cond.Route, cond.Server, cond)
		}
	}
}

// TestLifetimeThroughProxy: behind a 2 s proxy_read_timeout an idle
// socket lives about that long (the proxy closes it: not held to the end
// of the 3.75 s hold), and one pinging every 500 ms is held to the end;
// the app, an event loop, never starves /fast. On NGINX (the real stack,
// Uvicorn) and the embedded proxy.
func TestLifetimeThroughProxy(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct{ stack, server string }{{stack.NameEmbedded, stack.AsyncServer}, {stack.NameReal, "uvicorn-1"}} {
		t.Run(tc.stack, func(t *testing.T) {
			c := Published()
			c.Reps = 1
			c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(3500*time.Millisecond)
			read := lab.Duration(2 * time.Second)
			c.Conditions = []Condition{{Route: stack.RouteBufferingOn, Server: tc.server, Sockets: 2, ProxyReadTimeout: read},
				{Route: stack.RouteBufferingOn, Server: tc.server, Sockets: 2, ProxyReadTimeout: read, Ping: lab.Duration(500 * time.Millisecond)}}
			res, err := c.Run(context.Background(), labtest.Env(t, tc.stack))
			if err != nil {
				t.Fatal(err)
			}
			conds := Summarize(res.(*Result).Runs)
			if len(conds) != 2 {
				t.Fatalf("%d conditions: %+v", len(conds), conds)
			}
			idle, pinged := conds[0], conds[1]
			t.Logf("idle: lifetime %v s, held %d; pinged: lifetime %v s, held %d", idle.LifetimeP50S, idle.Held, pinged.LifetimeP50S, pinged.Held)
			if idle.Held != 0 || idle.Opened != 2 || idle.LifetimeP50S.Value < 2 || idle.LifetimeP50S.Value >= c.Hold().Seconds() {
				t.Errorf("idle: %+v, want both sockets opened and closed by the proxy after 2 s, before the hold's end", idle)
			}
			if pinged.Held != 2 || pinged.LifetimeP50S.Value < c.Hold().Seconds() {
				t.Errorf("pinged: %+v, want both held to the end of the hold", pinged)
			}
			for _, cond := range conds {
				if cond.P95MS.Value > 1000 {
					t.Errorf("/fast p95 %v ms beside an event loop's sockets", cond.P95MS)
				}
			}
		})
	}
}

// TestConsumersMemoryEmbedded: four consumers at 256 KiB/s of 160 x 256
// KiB pushes: an app that queues without limit holds what the path
// cannot (its RSS peak at least half of 4 x (the pushes stamped by then -
// the path) above the one that waits for its sockets), and the one that
// waits holds nothing more; both keep serving /fast (an event loop).
func TestConsumersMemoryEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(2500*time.Millisecond)
	c.Conditions = []Condition{{Route: stack.RouteDirect, Server: stack.AsyncServer, Sockets: 4, Mode: ModeConsume}}
	rss := map[string]recorder.Maybe{}
	for _, queue := range []string{"wait", "unbounded"} {
		c.Socket.Push.Queue = queue
		res, err := c.Run(context.Background(), labtest.Env(t, stack.NameEmbedded))
		if err != nil {
			t.Fatal(err)
		}
		cond := Summarize(res.(*Result).Runs)[0]
		t.Logf("queue %s: %d messages read, delay p95 %v ms, app RSS peak %v MiB, /fast p95 %v ms", queue, cond.Messages, cond.DelayP95MS,
			cond.AppRSSPeakMiB, cond.P95MS)
		if cond.Runs != 1 || cond.Opened != 4 || cond.Held != 4 || cond.Messages == 0 || !cond.AppRSSPeakMiB.Valid || cond.P95MS.Value > 1000 {
			t.Errorf("queue %s: %+v, want 4 consumers reading to the end of the hold, the app's RSS sampled, /fast not starved", queue, cond)
		}
		rss[queue] = cond.AppRSSPeakMiB
	}
	p := c.Socket.Push
	stamped := min(float64(p.Count), c.Hold().Seconds()/time.Duration(p.Interval).Seconds()) * float64(p.Pad)
	beyond := (stamped - float64(slowlabtest.WmemMax(t)) - 2*float64(p.RcvBuf) - 2*float64(p.Pad)) / (1 << 20)
	if d := rss["unbounded"].Value - rss["wait"].Value; d < 4*beyond/2 {
		t.Errorf("RSS peak %v MiB queueing without limit, %v waiting: %.1f MiB apart, want at least %.1f", rss["unbounded"], rss["wait"], d, 4*beyond/2)
	}
}

// TestConsumersOOMReal: Node.js and Uvicorn under the published 128 MiB
// app limit, four consumers at 256 KiB/s of 400 x 256 KiB pushes (100
// MiB a socket) for 4 s, each app once per queue (the conditions' own,
// in one session): waiting for its sockets it holds them with no OOM
// kill (Node.js honours write() returning false; Uvicorn's wsproto
// send() waits while the transport has paused writing); queueing without
// limit it would hold about 4 x 100 MiB, and the kernel kills it: the
// run fails with the reason and the kill is counted. The app gets a
// whole core instead of the published 0.25, so the kill does not depend
// on how fast a loaded machine lets it render the pushes (at 0.25 CPU a
// run on a loaded machine peaked at 116 MiB with 160 pushes a socket).
// The kill comes early (Node.js after 13 of its 10/s /fast requests,
// Uvicorn before the first), and a run lasts /fast's duration whether or
// not its app was killed: 4 s, not 8, is still three times that long for
// the waiting apps to hold their sockets without one.
func TestConsumersOOMReal(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(4*time.Second)
	c.Socket.Push.Count = 400
	c.Conditions = nil
	for _, server := range []string{"node-1", "uvicorn-1"} {
		for _, queue := range []string{"wait", "unbounded"} {
			c.Conditions = append(c.Conditions, Condition{Route: stack.RouteDirect, Server: server, Sockets: 4, Mode: ModeConsume, Queue: queue})
		}
	}
	env := labtest.Env(t, stack.NameReal)
	env.Stack.Limits["app"] = cgroup.Limits{CPUCores: 1, MemoryBytes: lab.PublishedLimits()["app"].MemoryBytes}
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	runs := res.(*Result).Runs
	if len(runs) != len(c.Conditions) {
		t.Fatalf("%d runs, want %d", len(runs), len(c.Conditions))
	}
	for _, run := range runs {
		t.Logf("%s %s: %s %q, app RSS peak %v MiB, memory peak %v MiB, OOM kills %v", run.Server, run.Queue, run.Status, run.Reason,
			run.AppRSSPeakMiB, run.AppMemPeakMiB, run.AppOOMKills)
		killed := run.Queue == "unbounded"
		if got := run.AppOOMKills.Value > 0; got != killed || !run.AppOOMKills.Valid {
			t.Errorf("%s queue %s: OOM kills %v, want killed %t", run.Server, run.Queue, run.AppOOMKills, killed)
		}
		if (run.Status == recorder.RunOK) == killed {
			t.Errorf("%s queue %s: run %s %q, want ok %t", run.Server, run.Queue, run.Status, run.Reason, !killed)
		}
	}
}
