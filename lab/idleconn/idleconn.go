package idleconn

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/internal/cliflag"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// Name is the experiment's name.
const Name = "idle-connections"

// Limits of the configuration.
const (
	// MaxConns is the most connections a condition holds: issue 17's
	// largest K.
	MaxConns = loadgen.MaxHeldConns
	// MaxHold bounds each connection's hold, so a run is bounded.
	MaxHold = 10 * time.Minute
	// connsPerSource is how many connections share one source address
	// when the scenario lists none: 4,000 stays well inside the ephemeral
	// port range (28,000 ports) however many TIME_WAIT sockets the host has
	// towards other peers.
	connsPerSource = 4000
)

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common `yaml:",inline"`
	// The grid: every route x server x mode x connections.
	RouteNames  []stack.Route `yaml:"routes"`
	ServerNames []string      `yaml:"servers"`
	Modes       []string      `yaml:"modes"`
	Conns       []int         `yaml:"connections"`
	// Hold bounds each connection: its holder closes it this long after it
	// connected if the server has not.
	Hold lab.Duration `yaml:"hold"`
	// ByteEvery is the slowloris pace.
	ByteEvery lab.Duration `yaml:"byte_every"`
	// ConnectTimeout bounds each connect (a server whose backlog is full
	// drops SYNs) and Dialers the connects in flight.
	ConnectTimeout lab.Duration `yaml:"connect_timeout"`
	Dialers        int          `yaml:"dialers"`
	// Sources are the local addresses the connections come from, in turn
	// (127.0.0.2, ...); empty: one per 4,000 connections from 127.0.0.2.
	Sources []string `yaml:"sources"`
	// AppTimeout is the app's worker timeout (Gunicorn's --timeout, the
	// embedded app's --worker-timeout) and HeaderTimeout the proxy's
	// client_header_timeout; 0: each component's default (Gunicorn 30 s,
	// NGINX 60 s; the embedded app none).
	AppTimeout    lab.Duration `yaml:"app_timeout"`
	HeaderTimeout lab.Duration `yaml:"client_header_timeout"`
	Fast          lab.FastSpec `yaml:"fast"`
}

// Condition is one cell of the grid.
type Condition struct {
	Route  stack.Route
	Server string
	Mode   loadgen.HoldMode
	Conns  int
}

// Published returns issue 17's grid: K = 10, 100, 1,000 and 10,000 idle
// and slowloris connections, directly and behind the proxy at its
// defaults, on sync-2 and gthread-1x4 (models every stack has;
// examples/idle-connections-real.yaml lists every real one); each
// connection held at most 100 s (past NGINX's 60 s client_header_timeout
// and Node.js's 60-90 s header timeout), /fast at 8 requests a second for
// 9 s; once each.
func Published() *Config {
	return &Config{Common: lab.PublishedCommon(Name, 1),
		RouteNames: []stack.Route{stack.RouteDirect, stack.RouteBufferingOn}, ServerNames: []string{"sync-2", "gthread-1x4"},
		Modes: []string{string(loadgen.HoldIdle), string(loadgen.HoldSlowloris)}, Conns: []int{10, 100, 1000, 10000},
		Hold: lab.Duration(100 * time.Second), ByteEvery: lab.Duration(loadgen.DefaultByteEvery),
		ConnectTimeout: lab.Duration(5 * time.Second), Dialers: 256, Sources: []string{}, // as a scenario reads "sources: []"
		Fast: lab.PublishedFast()}
}

// Reduce implements lab.Reducer: --quick runs 10 idle and 10 slowloris
// connections on the published servers and routes, with a 3 s app
// timeout, a 3 s client_header_timeout and a 10 s hold.
func (c *Config) Reduce() {
	c.Reps = 1
	c.Conns = []int{10}
	c.Hold = lab.Duration(10 * time.Second)
	c.AppTimeout, c.HeaderTimeout = lab.Duration(3*time.Second), lab.Duration(3*time.Second)
}

// Servers implements lab.Stacked.
func (c *Config) Servers() []stack.Server {
	return lab.ParsedServers(c.ServerNames, func(name string) string { return name })
}

// Routes implements lab.Routed.
func (c *Config) Routes() []stack.Route { return c.RouteNames }

// Conditions lists the grid in run order.
func (c *Config) Conditions() []Condition {
	var out []Condition
	for _, r := range c.RouteNames {
		for _, s := range c.ServerNames {
			for _, m := range c.Modes {
				for _, k := range c.Conns {
					out = append(out, Condition{Route: r, Server: s, Mode: loadgen.HoldMode(m), Conns: k})
				}
			}
		}
	}
	return out
}

// RunID is the run id of a condition's rep.
func (cond Condition) RunID(rep int) string {
	return fmt.Sprintf("%s.%s.%s.k%d.rep%d", cond.Route, cond.Server, cond.Mode, cond.Conns, rep)
}

// Flags implements lab.Config.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(lab.NamesFlag(&c.ServerNames), "servers", "comma-separated server models, e.g. sync-2,gthread-1x4,async")
	fs.Var(lab.NamesFlag(&c.RouteNames), "routes", "comma-separated routes: direct, proxy-buffering-on")
	fs.Var(lab.NamesFlag(&c.Modes), "modes", "comma-separated: idle, slowloris")
	fs.Var(&cliflag.List[int]{To: &c.Conns, Parse: func(s string) (int, error) {
		k, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("%q: want a number of connections", s)
		}
		return k, nil
	}}, "connections", "comma-separated K, e.g. 10,100,1000,10000")
	fs.DurationVar((*time.Duration)(&c.Hold), "hold", time.Duration(c.Hold), "each connection's bound: its holder closes it this long after it connected")
	fs.DurationVar((*time.Duration)(&c.AppTimeout), "app-timeout", time.Duration(c.AppTimeout), "the app's worker timeout, e.g. 30s (Gunicorn --timeout; 0: the app's default)")
	fs.DurationVar((*time.Duration)(&c.HeaderTimeout), "client-header-timeout", time.Duration(c.HeaderTimeout), "the proxy's client_header_timeout, e.g. 60s (0: its default, 60s)")
}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if len(c.RouteNames) == 0 || len(c.ServerNames) == 0 || len(c.Modes) == 0 || len(c.Conns) == 0 {
		return errors.New("routes, servers, modes, connections: each needs at least one value")
	}
	for i, r := range c.RouteNames {
		if r != stack.RouteDirect && r != stack.RouteBufferingOn {
			return fmt.Errorf("routes[%d] %q: allowed %s, %s (the proxy at its defaults)", i, r, stack.RouteDirect, stack.RouteBufferingOn)
		}
	}
	for i, s := range c.ServerNames {
		if _, err := stack.ParseServer(s); err != nil {
			return fmt.Errorf("servers[%d]: %w", i, err)
		}
	}
	for i, m := range c.Modes {
		if !slices.Contains(loadgen.HoldModes, loadgen.HoldMode(m)) {
			return fmt.Errorf("modes[%d] %q: allowed %v", i, m, loadgen.HoldModes)
		}
	}
	for i, k := range c.Conns {
		if k < 1 || k > MaxConns {
			return fmt.Errorf("connections[%d] %d: allowed 1 to %d", i, k, MaxConns)
		}
	}
	for i, s := range c.Sources {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() || !a.IsLoopback() {
			return fmt.Errorf("sources[%d] %q: must be an IPv4 address in 127.0.0.0/8", i, s)
		}
	}
	switch {
	case c.Hold <= 0 || time.Duration(c.Hold) > MaxHold:
		return fmt.Errorf("hold %s: allowed more than 0 up to %s", time.Duration(c.Hold), MaxHold)
	case c.ByteEvery <= 0 || c.ByteEvery > c.Hold:
		return fmt.Errorf("byte_every %s: allowed more than 0 up to the hold, %s", time.Duration(c.ByteEvery), time.Duration(c.Hold))
	case c.ConnectTimeout <= 0 || time.Duration(c.ConnectTimeout) > time.Minute:
		return fmt.Errorf("connect_timeout %s: allowed more than 0 up to 1m", time.Duration(c.ConnectTimeout))
	case c.Dialers < 1 || c.Dialers > MaxConns:
		return fmt.Errorf("dialers %d: allowed 1 to %d", c.Dialers, MaxConns)
	case c.AppTimeout < 0 || time.Duration(c.AppTimeout) > stack.MaxAppTimeout || time.Duration(c.AppTimeout)%time.Second != 0:
		return fmt.Errorf("app_timeout %s: want 0 (the app's default) or whole seconds up to %s", time.Duration(c.AppTimeout), stack.MaxAppTimeout)
	case c.HeaderTimeout < 0 || time.Duration(c.HeaderTimeout) > stack.MaxClientHeaderTimeout || time.Duration(c.HeaderTimeout)%time.Second != 0:
		return fmt.Errorf("client_header_timeout %s: want 0 (the proxy's default) or whole seconds up to %s", time.Duration(c.HeaderTimeout), stack.MaxClientHeaderTimeout)
	}
	return c.Fast.Validate()
}

// sources are the addresses the connections of a k-connection condition
// come from.
func (c *Config) sources(k int) []netip.Addr {
	var out []netip.Addr
	for _, s := range c.Sources {
		out = append(out, netip.MustParseAddr(s))
	}
	if len(out) > 0 {
		return out
	}
	a := netip.AddrFrom4([4]byte{127, 0, 0, 2})
	for range (k + connsPerSource - 1) / connsPerSource {
		out = append(out, a)
		a = a.Next()
	}
	return out
}
