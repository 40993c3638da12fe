package websocket

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// Name is the experiment's name.
const Name = "websocket"

// Limits of the configuration.
const (
	MaxSockets = 1000
	MaxHold    = 10 * time.Minute
)

// Routes lists the experiment's routes: a tunnel is the same whatever
// the proxy's buffering, so one proxied route is enough.
var Routes = []stack.Route{stack.RouteDirect, stack.RouteBufferingOn}

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common            `yaml:",inline"`
	lab.Beside[Condition] `yaml:",inline"`
	Socket                SocketSpec `yaml:"socket"`
}

// Condition is one cell of the matrix: Sockets WebSockets held on
// Server, on Route, each pinging every Ping (0: never), through a proxy
// whose proxy_read_timeout is ProxyReadTimeout (0: its default, 60 s; on
// a proxied route only): an idle socket lives that long.
type Condition struct {
	Route stack.Route `yaml:"route"`
	// Server is a registered model (sync-2, gthread-1x4, ...), or "async":
	// the stack's event-loop server.
	Server  string `yaml:"server"`
	Sockets int    `yaml:"sockets"`
	// Mode is what each socket's client does: idle (the default) holds
	// an echoing socket; consume reads the app's pushes (Socket.Push) at
	// Socket.Push.Rate, a slow consumer.
	Mode string `yaml:"mode"`
	// Queue is a consumers' condition's app queue, overriding
	// Socket.Push.Queue: wait or unbounded.
	Queue            string       `yaml:"queue"`
	Ping             lab.Duration `yaml:"ping"`
	ProxyReadTimeout lab.Duration `yaml:"proxy_read_timeout"`
}

// SocketSpec is what each WebSocket client does: an idle one opens an
// echoing /ws and holds it (pinging as its condition says) until the
// run's /fast schedule is over (Hold from its start) or the path ends
// it; a consumer reads Push's messages until the app closes, the path
// ends it or the hold is over.
type SocketSpec struct {
	Path    string       `yaml:"path"`
	Timeout lab.Duration `yaml:"timeout"` // the connect and the upgrade
	Push    PushSpec     `yaml:"push"`
}

// The modes of a condition.
const (
	ModeIdle    = "idle"
	ModeConsume = "consume"
)

// PushSpec is what a consumer asks the app to push and how it reads:
// Count messages of Pad bytes of padding, one every Interval, that the
// app writes when the socket takes them (queue wait) or queues without
// limit (unbounded); read at Rate bytes a second with an SO_RCVBUF of
// RcvBuf.
type PushSpec struct {
	Interval lab.Duration `yaml:"interval"`
	Count    int          `yaml:"count"`
	Pad      lab.Size     `yaml:"pad"`
	Queue    string       `yaml:"queue"`
	Rate     lab.Size     `yaml:"rate"`
	RcvBuf   lab.Size     `yaml:"rcvbuf"`
}

// Published returns the matrix: idle sockets on each server model,
// directly and through the proxy, and their lifetime behind a 3 s
// proxy_read_timeout without and with pings; held while /fast runs at 8
// requests a second for 9 s; 3 repetitions.
func Published() *Config {
	c := &Config{Common: lab.PublishedCommon(Name, 3),
		Beside: lab.Beside[Condition]{Fast: lab.PublishedFast()},
		Socket: SocketSpec{Path: "/ws", Timeout: lab.Duration(30 * time.Second),
			Push: PushSpec{Interval: lab.Duration(time.Millisecond), Count: 160, Pad: 256 << 10, Queue: appserver.WSQueueUnbounded,
				Rate: 256 << 10, RcvBuf: 64 << 10}}}
	for _, r := range Routes {
		for _, n := range []int{1, 2, 4} {
			c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Sockets: n})
		}
	}
	c.Conditions = append(c.Conditions,
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Sockets: 2},
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Sockets: 4},
		Condition{Route: stack.RouteDirect, Server: stack.AsyncServer, Sockets: 4},
		Condition{Route: stack.RouteBufferingOn, Server: stack.AsyncServer, Sockets: 2, ProxyReadTimeout: lab.Duration(3 * time.Second)},
		Condition{Route: stack.RouteBufferingOn, Server: stack.AsyncServer, Sockets: 2, ProxyReadTimeout: lab.Duration(3 * time.Second),
			Ping: lab.Duration(time.Second)})
	idleByDefault(c.Conditions)
	return c
}

// idleByDefault names the mode of conditions that set none.
func idleByDefault(conds []Condition) {
	for i := range conds {
		conds[i].Mode = cmp.Or(conds[i].Mode, ModeIdle)
	}
}

// Reduce implements lab.Reducer: --quick runs a part of the matrix once,
// beside /fast for 3.5 s, the lifetime behind a 2 s proxy_read_timeout.
func (c *Config) Reduce() {
	c.Reps = 1
	if c.Fast.Duration == Published().Fast.Duration {
		c.Fast.Duration = lab.Duration(3500 * time.Millisecond)
	}
	c.Conditions = nil
	for _, r := range Routes {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Sockets: 2})
	}
	c.Conditions = append(c.Conditions,
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Sockets: 4},
		Condition{Route: stack.RouteDirect, Server: stack.AsyncServer, Sockets: 4},
		Condition{Route: stack.RouteBufferingOn, Server: stack.AsyncServer, Sockets: 2, ProxyReadTimeout: lab.Duration(2 * time.Second)},
		Condition{Route: stack.RouteBufferingOn, Server: stack.AsyncServer, Sockets: 2, ProxyReadTimeout: lab.Duration(2 * time.Second),
			Ping: lab.Duration(500 * time.Millisecond)})
	idleByDefault(c.Conditions)
}

// Flags implements lab.Config: everything is in the scenario.
func (c *Config) Flags(fs *flag.FlagSet) {}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if err := lab.ValidateConditions(c.Conditions, Condition.validate); err != nil {
		return err
	}
	if err := c.Fast.Validate(); err != nil {
		return err
	}
	return c.Socket.validate()
}

func (cond Condition) validate() error {
	if !slices.Contains(Routes, cond.Route) {
		return fmt.Errorf("route %q: allowed %s (a tunnel does not depend on the proxy's buffering)", cond.Route, stack.RouteList(Routes))
	}
	if cond.Server != stack.AsyncServer {
		if _, err := stack.ParseServer(cond.Server); err != nil {
			return err
		}
	}
	p, r := time.Duration(cond.Ping), time.Duration(cond.ProxyReadTimeout)
	switch {
	case cond.Mode != "" && cond.Mode != ModeIdle && cond.Mode != ModeConsume:
		return fmt.Errorf("mode %q: allowed idle (the default) or consume", cond.Mode)
	case cond.Queue != "" && cond.Mode != ModeConsume:
		return fmt.Errorf("queue %q: only a consume condition has the app push (an idle socket's app queues nothing)", cond.Queue)
	case cond.Queue != "" && cond.Queue != appserver.WSQueueWait && cond.Queue != appserver.WSQueueUnbounded:
		return fmt.Errorf("queue %q: %s", cond.Queue, queueChoice)
	case cond.Sockets < 0 || cond.Sockets > MaxSockets:
		return fmt.Errorf("sockets %d: allowed 0 to %d", cond.Sockets, MaxSockets)
	case p < 0 || p > MaxHold:
		return fmt.Errorf("ping %s: allowed 0 (no pings) to %s", p, MaxHold)
	case r != 0 && cond.Route == stack.RouteDirect:
		return fmt.Errorf("proxy_read_timeout %s: there is no proxy on route direct", r)
	case r != 0 && (r < time.Second || r > stack.MaxProxyReadTimeout || r%time.Second != 0):
		return fmt.Errorf("proxy_read_timeout %s: allowed 0 (the proxy's 60s) or whole seconds from 1s to %s", r, stack.MaxProxyReadTimeout)
	}
	return nil
}

func (s SocketSpec) validate() error {
	t := time.Duration(s.Timeout)
	switch {
	case !strings.HasPrefix(s.Path, "/"):
		return fmt.Errorf("socket.path %q: must start with /", s.Path)
	case t <= 0 || t > time.Hour:
		return fmt.Errorf("socket.timeout %s: allowed more than 0 up to 1h", t)
	}
	return s.Push.validate()
}

// queueChoice says what a queue may be.
const queueChoice = "allowed wait (the app writes when the socket takes it) or unbounded (it queues in memory)"

func (p PushSpec) validate() error {
	iv := time.Duration(p.Interval)
	switch {
	case iv < appserver.MinWSInterval || iv > appserver.MaxWSInterval:
		return fmt.Errorf("socket.push.interval %s: allowed %s to %s", iv, appserver.MinWSInterval, appserver.MaxWSInterval)
	case p.Count < 0 || p.Count > appserver.MaxWSCount:
		return fmt.Errorf("socket.push.count %d: allowed 0 to %d", p.Count, appserver.MaxWSCount)
	case p.Pad < 0 || p.Pad > appserver.MaxWSMessage:
		return fmt.Errorf("socket.push.pad %d: allowed 0 to 16m bytes (a larger message is refused by every app)", int64(p.Pad))
	case p.Queue != appserver.WSQueueWait && p.Queue != appserver.WSQueueUnbounded:
		return fmt.Errorf("socket.push.queue %q: %s", p.Queue, queueChoice)
	case p.Rate < 0:
		return fmt.Errorf("socket.push.rate %d: allowed 0 (as fast as messages come) or more bytes a second", int64(p.Rate))
	case p.RcvBuf < 0 || p.RcvBuf > 64<<20:
		return fmt.Errorf("socket.push.rcvbuf %d: allowed 0 (the kernel's) to 64m bytes", int64(p.RcvBuf))
	}
	return nil
}

// Params is what each socket of cond asks the app for: an echoing
// socket, or the pushes.
func (c *Config) Params(cond Condition) appserver.WSParams {
	if cond.Mode != ModeConsume {
		return appserver.WSParams{Mode: appserver.WSEcho}
	}
	p := c.Socket.Push
	return appserver.WSParams{Mode: appserver.WSPush, Interval: time.Duration(p.Interval), Count: p.Count, Pad: int(p.Pad), Queue: c.Queue(cond)}
}

// Queue is cond's app queue: its own, or Socket.Push's; empty for an
// idle condition.
func (c *Config) Queue(cond Condition) string {
	if cond.Mode != ModeConsume {
		return ""
	}
	return cmp.Or(cond.Queue, c.Socket.Push.Queue)
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Rep    int
}

// ID is the run's run_id: route, server, sockets, a consumers' mode and
// queue, the ping interval and proxy_read_timeout when set, and rep.
func (r RunSpec) ID() string {
	id := fmt.Sprintf("%s.%s.ws%d", r.Route, r.Server.Name(), r.Sockets)
	if r.Mode == ModeConsume {
		id += ".consume"
		if r.Queue != "" {
			id += "-" + r.Queue
		}
	}
	if r.Ping > 0 {
		id += ".ping" + time.Duration(r.Ping).String()
	}
	if r.ProxyReadTimeout > 0 {
		id += ".read" + time.Duration(r.ProxyReadTimeout).String()
	}
	return fmt.Sprintf("%s.rep%d", id, r.Rep)
}

// Runs expands the matrix on st: every condition once per rep, reps
// outermost; "async" becomes the stack's event-loop server, and a
// condition naming it on a stack without one is left out (skipped names
// them); a consumers' condition carries its queue.
func (c *Config) Runs(st stack.Stack) ([]RunSpec, []string) {
	return stack.ExpandRuns(st, c.Reps, c.Conditions, func(cond Condition, srv stack.Server, rep int) RunSpec {
		cond.Queue = c.Queue(cond)
		return RunSpec{Condition: cond, Server: srv, Rep: rep}
	})
}

// RouteName is the condition's route (with ServerName, a stack.RoutedCondition).
func (c Condition) RouteName() stack.Route { return c.Route }

// ServerName is the server the condition names ("async" among them).
func (c Condition) ServerName() string { return c.Server }

// Hold is how long each socket is held: the /fast schedule's end.
func (c *Config) Hold() time.Duration { return time.Duration(c.Fast.Offset + c.Fast.Duration) }
