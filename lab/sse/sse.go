package sse

import (
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
const Name = "sse"

// The pseudo-routes: a deployed route (buffering on or off) with the
// app's X-Accel-Buffering on each stream or the proxy's
// proxy_http_version 1.0 (NGINX's default; the lab's is 1.1); pseudo
// says what each is, the package doc what it does.
const (
	RouteAccelNo        stack.Route = "proxy-buffering-on-accel-no"
	RouteHTTP10         stack.Route = "proxy-buffering-on-http10"
	RouteHTTP10AccelNo  stack.Route = "proxy-buffering-on-http10-accel-no"
	RouteHTTP10AccelYes stack.Route = "proxy-buffering-off-http10-accel-yes"
)

// Routes lists the experiment's routes.
var Routes = []stack.Route{stack.RouteDirect, stack.RouteBufferingOff, stack.RouteBufferingOn, RouteAccelNo,
	RouteHTTP10, RouteHTTP10AccelNo, RouteHTTP10AccelYes}

// pseudo is what each pseudo-route is: the route the stack deploys,
// whether its proxy asks the app in HTTP/1.0, and the X-Accel-Buffering
// its streams ask the app for.
var pseudo = map[stack.Route]struct {
	deployed stack.Route
	http10   bool
	accel    string
}{
	RouteAccelNo:        {stack.RouteBufferingOn, false, "no"},
	RouteHTTP10:         {stack.RouteBufferingOn, true, ""},
	RouteHTTP10AccelNo:  {stack.RouteBufferingOn, true, "no"},
	RouteHTTP10AccelYes: {stack.RouteBufferingOff, true, "yes"},
}

// deployed is the route the stack runs for r.
func deployed(r stack.Route) stack.Route {
	if p, ok := pseudo[r]; ok {
		return p.deployed
	}
	return r
}

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common            `yaml:",inline"`
	lab.Beside[Condition] `yaml:",inline"`
	Stream                StreamSpec `yaml:"stream"`
}

// Condition is one cell of the matrix.
type Condition struct {
	// Route is direct, proxy-buffering-off, proxy-buffering-on, or a
	// pseudo-route (Routes).
	Route stack.Route `yaml:"route"`
	// Server is a registered model (sync-2, gthread-1x4, ...), or "async":
	// the stack's event-loop server (the embedded async model; on the real
	// stack the first async model it has, with one worker).
	Server  string `yaml:"server"`
	Streams int    `yaml:"streams"`
}

// StreamSpec is what each SSE client asks for.
type StreamSpec struct {
	Path     string       `yaml:"path"`
	Interval lab.Duration `yaml:"interval"` // between two events, 10ms to 10s
	Duration lab.Duration `yaml:"duration"` // of each stream, at least one interval, at most 5m
	Pad      lab.Size     `yaml:"pad"`      // bytes of padding in each event, 0 to 64k
	Timeout  lab.Duration `yaml:"timeout"`  // each stream, from connect to its end
}

// Published returns the matrix: direct, buffering off, on and on with
// X-Accel-Buffering: no x 1, 2, 4 streams on sync-2; the three HTTP/1.0
// upstream routes with 2 streams on sync-2; gthread 1x4 direct with 2 and
// 4; the stack's async server direct with 4. An event every 100 ms for
// 10 s, 3 repetitions, /fast at 8 req/s for 9 s.
func Published() *Config {
	c := &Config{Common: lab.PublishedCommon(Name, 3),
		Beside: lab.Beside[Condition]{Fast: lab.PublishedFast()},
		Stream: StreamSpec{Path: "/events", Interval: lab.Duration(appserver.DefaultSSEInterval), Duration: lab.Duration(appserver.DefaultSSEDuration),
			Timeout: lab.Duration(time.Minute)}}
	for _, r := range Routes[:4] {
		for _, n := range []int{1, 2, 4} {
			c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: n})
		}
	}
	for _, r := range Routes[4:] {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: 2})
	}
	c.Conditions = append(c.Conditions,
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Streams: 2},
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Streams: 4},
		Condition{Route: stack.RouteDirect, Server: stack.AsyncServer, Streams: 4})
	return c
}

// Reduce implements lab.Reducer: --quick runs 2 streams on sync-2 on
// each route but proxy-buffering-off-http10-accel-yes, gthread 1x4 and
// async direct, once each, streams of 4 s (unless the scenario set
// another duration) beside /fast for 3.5 s.
func (c *Config) Reduce() {
	c.Reps = 1
	if c.Stream.Duration == Published().Stream.Duration {
		c.Stream.Duration = lab.Duration(4 * time.Second)
		c.Fast.Duration = lab.Duration(3500 * time.Millisecond)
	}
	c.Conditions = nil
	for _, r := range Routes[:6] {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: 2})
	}
	c.Conditions = append(c.Conditions,
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Streams: 2},
		Condition{Route: stack.RouteDirect, Server: stack.AsyncServer, Streams: 2})
}

// Flags implements lab.Config: everything else is in the scenario.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var((*lab.DurationFlag)(&c.Stream.Interval), "interval", "time between two events of a stream, 10ms to 10s")
	fs.Var((*lab.DurationFlag)(&c.Stream.Duration), "stream-duration", "each stream's length, at least one interval, at most 5m")
}

// Routes implements lab.Routed: the deployed routes.
func (c *Config) Routes() []stack.Route {
	return lab.RoutesOf(c.Conditions, func(cond Condition) stack.Route { return deployed(cond.Route) })
}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if err := lab.ValidateConditions(c.Conditions, Condition.validate); err != nil {
		return err
	}
	if err := c.Fast.Validate(); err != nil {
		return err
	}
	return c.Stream.validate()
}

func (cond Condition) validate() error {
	if !slices.Contains(Routes, cond.Route) {
		return fmt.Errorf("route %q: allowed %s", cond.Route, stack.RouteList(Routes))
	}
	if cond.Server != stack.AsyncServer {
		if _, err := stack.ParseServer(cond.Server); err != nil {
			return err
		}
	}
	if cond.Streams < 0 || cond.Streams > 1000 {
		return fmt.Errorf("streams %d: allowed 0 to 1000", cond.Streams)
	}
	return nil
}

func (s StreamSpec) validate() error {
	iv, d := time.Duration(s.Interval), time.Duration(s.Duration)
	switch {
	case !strings.HasPrefix(s.Path, "/"):
		return fmt.Errorf("stream.path %q: must start with /", s.Path)
	case iv < appserver.MinSSEInterval || iv > appserver.MaxSSEInterval:
		return fmt.Errorf("stream.interval %s: allowed %s to %s", iv, appserver.MinSSEInterval, appserver.MaxSSEInterval)
	case d < iv || d > appserver.MaxSSEDuration:
		return fmt.Errorf("stream.duration %s: allowed one interval (%s) to %s", d, iv, appserver.MaxSSEDuration)
	case s.Pad < 0 || s.Pad > appserver.MaxSSEPad:
		return fmt.Errorf("stream.pad %d: allowed 0 to 64k bytes", int64(s.Pad))
	case s.Timeout <= 0 || time.Duration(s.Timeout) > time.Hour:
		return fmt.Errorf("stream.timeout %s: allowed more than 0 up to 1h", time.Duration(s.Timeout))
	case time.Duration(s.Timeout) <= d:
		return fmt.Errorf("stream.timeout %s: must be longer than stream.duration %s", time.Duration(s.Timeout), d)
	}
	return nil
}

// Params is what each stream asks the app for.
func (c *Config) Params(route stack.Route) appserver.SSEParams {
	return appserver.SSEParams{Interval: time.Duration(c.Stream.Interval), Duration: time.Duration(c.Stream.Duration), Pad: int(c.Stream.Pad),
		Accel: pseudo[route].accel}
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Rep    int
}

// ID is the run's run_id: route, server, streams and rep.
func (r RunSpec) ID() string {
	return fmt.Sprintf("%s.%s.s%d.rep%d", r.Route, r.Server.Name(), r.Streams, r.Rep)
}

// Runs expands the matrix on st: every condition once per rep, reps
// outermost; "async" becomes the stack's event-loop server, and a
// condition naming it on a stack without one is left out (skipped names
// them).
func (c *Config) Runs(st stack.Stack) ([]RunSpec, []string) {
	return stack.ExpandRuns(st, c.Reps, c.Conditions, func(cond Condition, srv stack.Server, rep int) RunSpec {
		return RunSpec{Condition: cond, Server: srv, Rep: rep}
	})
}

// RouteName is the condition's route (with ServerName, a stack.RoutedCondition).
func (c Condition) RouteName() stack.Route { return c.Route }

// ServerName is the server the condition names ("async" among them).
func (c Condition) ServerName() string { return c.Server }

// Duration is a run's intrinsic length: the longer of the fast schedule
// and a stream.
func (c *Config) Duration() time.Duration {
	return max(time.Duration(c.Fast.Offset+c.Fast.Duration), time.Duration(c.Stream.Duration))
}

// appTimeout is the app's timeout for a run: Gunicorn's default (30 s)
// kills a sync worker whose stream outlives it, so a stream longer than
// 20 s gets its length and 30 s more.
func (c *Config) appTimeout() time.Duration {
	d := time.Duration(c.Stream.Duration)
	if d <= 20*time.Second {
		return 0
	}
	return min(d.Truncate(time.Second)+30*time.Second, stack.MaxAppTimeout)
}
