package h2slowclient

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// Name is the experiment's name.
const Name = "h2-slow-client"

// MaxStreams bounds a condition's slow streams: NGINX's
// http2_max_concurrent_streams (128) and a little more, so its refusal
// of the rest can be seen.
const MaxStreams = 200

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common            `yaml:",inline"`
	lab.Beside[Condition] `yaml:",inline"`
	Slow                  SlowSpec `yaml:"slow"`
}

// Condition is one cell of the matrix: Streams slow streams read /large
// from Server through the proxy on Route (an HTTP/2 route), all on one
// connection or a connection each (Conns), while /fast runs on its own
// connection or on the slow streams' first (Fast); each stream paced or
// stalled (Read).
type Condition struct {
	Route   stack.Route `yaml:"route"`
	Server  string      `yaml:"server"`
	Streams int         `yaml:"streams"`
	Conns   string      `yaml:"conns"` // one (the default) or each
	Fast    string      `yaml:"fast"`  // separate (the default) or shared
	Read    string      `yaml:"read"`  // paced (the default) or stall
	// SendTimeout is the proxy's send_timeout (0: its default, 60 s): how
	// long it waits for a stalled stream's window to open.
	SendTimeout lab.Duration `yaml:"send_timeout"`
	// ConnWindow is the connections' window, overriding slow.conn_window
	// (0): at the protocol's 64 KiB the slow streams' unread bytes can
	// fill it and hold /fast on their connection.
	ConnWindow lab.Size `yaml:"conn_window"`
	// Protocol is what the clients speak to the proxy: h2 (the default)
	// or h3, HTTP/3 over QUIC on a TLS route (the proxy's TLS port over
	// UDP, loadgen.H3Conn), its streams slow by QUIC flow control with the
	// same windows.
	Protocol string `yaml:"protocol"`
}

// RouteName implements stack.RoutedCondition.
func (c Condition) RouteName() stack.Route { return c.Route }

// ServerName implements stack.RoutedCondition.
func (c Condition) ServerName() string { return c.Server }

// Condition values.
const (
	ConnsOne      = "one"
	ConnsEach     = "each"
	FastSeparate  = "separate"
	FastShared    = "shared"
	ReadPaced     = "paced"
	ReadStall     = "stall"
	ProtocolH2    = "h2"
	ProtocolH3    = "h3"
	defaultWindow = 64 << 10
)

// SlowSpec is what every slow stream does: GET Path (Size bytes of
// /large) with a stream window of StreamWindow (SETTINGS_INITIAL_WINDOW_SIZE)
// on connections whose window is ConnWindow, reading at Rate bytes a
// second (paced) or nothing until the hold is over (stall), the hold
// being the /fast schedule's end.
type SlowSpec struct {
	Path         string       `yaml:"path"`
	Size         lab.Size     `yaml:"size"`
	Rate         lab.Size     `yaml:"rate"`
	StreamWindow lab.Size     `yaml:"stream_window"`
	ConnWindow   lab.Size     `yaml:"conn_window"`
	Timeout      lab.Duration `yaml:"timeout"`
}

// Published returns the matrix: HTTP/2 streams on sync-2, paced or
// stalled, on one connection or a connection each, with the proxy's
// buffering off and on, over TLS and on gthread-1x4, then its HTTP/3
// column (h3Conditions). /fast at 8 requests a second for 9 s over HTTP/2;
// 16 MiB a stream at 256 KiB/s with 64 KiB windows; 3 repetitions.
func Published() *Config {
	c := &Config{Common: lab.PublishedCommon(Name, 3),
		Beside: lab.Beside[Condition]{Fast: lab.PublishedFast()},
		Slow: SlowSpec{Path: "/large", Size: 16 << 20, Rate: 256 << 10, StreamWindow: defaultWindow, ConnWindow: 16 << 20,
			Timeout: lab.Duration(2 * time.Minute)}}
	for _, r := range cleartext {
		for _, n := range []int{1, 2, 8} {
			c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: n})
		}
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: 8, Conns: ConnsEach},
			Condition{Route: r, Server: "sync-2", Streams: 8, Fast: FastShared},
			Condition{Route: r, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: lab.Duration(3 * time.Second)})
	}
	for _, n := range []int{32, 100} {
		c.Conditions = append(c.Conditions, Condition{Route: stack.RouteH2BufferingOff, Server: "sync-2", Streams: n},
			Condition{Route: stack.RouteH2BufferingOff, Server: "sync-2", Streams: n, Conns: ConnsEach})
	}
	for _, r := range []stack.Route{stack.RouteH2TLSBufferingOff, stack.RouteH2TLSBufferingOn} {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: 8})
	}
	c.Conditions = append(c.Conditions, Condition{Route: stack.RouteH2BufferingOff, Server: "gthread-1x4", Streams: 8})
	c.Conditions = append(c.Conditions, h3Conditions(lab.Duration(3*time.Second))...)
	defaults(c.Conditions)
	return c
}

// h3Conditions are the matrix's HTTP/3 column, on the TLS routes (a
// stack whose proxy does not serve HTTP/3 skips them), its stalled
// streams behind send_timeout send.
func h3Conditions(send lab.Duration) []Condition {
	off, on := stack.RouteH2TLSBufferingOff, stack.RouteH2TLSBufferingOn
	return []Condition{
		{Route: off, Server: "sync-2", Streams: 2, Protocol: ProtocolH3},
		{Route: off, Server: "sync-2", Streams: 8, Protocol: ProtocolH3},
		{Route: off, Server: "sync-2", Streams: 8, Conns: ConnsEach, Protocol: ProtocolH3},
		{Route: off, Server: "sync-2", Streams: 8, Fast: FastShared, Protocol: ProtocolH3},
		{Route: on, Server: "sync-2", Streams: 8, Protocol: ProtocolH3},
		{Route: off, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: send, Protocol: ProtocolH3},
		{Route: on, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: send, Protocol: ProtocolH3},
	}
}

// cleartext are the HTTP/2 routes without TLS (h2c), the matrix's main
// ones: TLS changes how a client reaches the proxy, not what the proxy
// does with its streams, which the TLS conditions check.
var cleartext = []stack.Route{stack.RouteH2BufferingOff, stack.RouteH2BufferingOn}

// defaults names the conditions' unset choices.
func defaults(conds []Condition) {
	for i := range conds {
		c := &conds[i]
		c.Conns, c.Fast, c.Read = cmp.Or(c.Conns, ConnsOne), cmp.Or(c.Fast, FastSeparate), cmp.Or(c.Read, ReadPaced)
		c.Protocol = cmp.Or(c.Protocol, ProtocolH2)
	}
}

// Reduce implements lab.Reducer: --quick runs a part of each column once
// on sync-2, its stalled streams behind a 2 s send_timeout, beside /fast
// for 4 s.
func (c *Config) Reduce() {
	c.Reps = 1
	if c.Fast.Duration == Published().Fast.Duration {
		c.Fast.Duration = lab.Duration(4 * time.Second)
	}
	c.Conditions = nil
	for _, r := range cleartext {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: 2}, Condition{Route: r, Server: "sync-2", Streams: 8})
	}
	c.Conditions = append(c.Conditions, Condition{Route: stack.RouteH2BufferingOff, Server: "sync-2", Streams: 8, Fast: FastShared},
		Condition{Route: stack.RouteH2TLSBufferingOff, Server: "sync-2", Streams: 8})
	for _, r := range cleartext {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: lab.Duration(2 * time.Second)})
	}
	for _, h3 := range h3Conditions(lab.Duration(2 * time.Second)) {
		if h3.Streams == 2 || h3.Conns == "" && h3.Fast == "" {
			c.Conditions = append(c.Conditions, h3)
		}
	}
	defaults(c.Conditions)
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
	if err := c.Slow.validate(); err != nil {
		return err
	}
	for i, cond := range c.Conditions {
		w := cmp.Or(cond.ConnWindow, c.Slow.ConnWindow)
		if cond.Protocol == ProtocolH3 && (c.Slow.StreamWindow < loadgen.H3MinWindow || w < loadgen.H3MinWindow) {
			return fmt.Errorf("conditions[%d]: protocol h3 with slow.stream_window %d, connection window %d: HTTP/3 needs each at least %d bytes "+
				"(a response's HEADERS travel in the stream's flow-controlled bytes)", i, int64(c.Slow.StreamWindow), int64(w), loadgen.H3MinWindow)
		}
	}
	return nil
}

func (cond Condition) validate() error {
	if !cond.Route.HTTP2() {
		return fmt.Errorf("route %q: allowed %s: the app servers (Gunicorn among them) speak HTTP/1.1, so HTTP/2 reaches them through the proxy", cond.Route,
			stack.RouteList(stack.HTTP2Routes()))
	}
	if !slices.Contains([]string{"", ProtocolH2, ProtocolH3}, cond.Protocol) {
		return fmt.Errorf("protocol %q: allowed h2 (HTTP/2) or h3 (HTTP/3 over QUIC, on a TLS route)", cond.Protocol)
	}
	if cond.Protocol == ProtocolH3 && !cond.Route.TLS() {
		tlsRoutes := slices.DeleteFunc(stack.HTTP2Routes(), func(r stack.Route) bool { return !r.TLS() })
		return fmt.Errorf("protocol h3 on route %q: HTTP/3 is QUIC, always TLS: allowed on %s", cond.Route, stack.RouteList(tlsRoutes))
	}
	if _, err := stack.ParseServer(cond.Server); err != nil {
		return err
	}
	s := time.Duration(cond.SendTimeout)
	switch {
	case cond.Streams < 1 || cond.Streams > MaxStreams:
		return fmt.Errorf("streams %d: allowed 1 to %d", cond.Streams, MaxStreams)
	case !slices.Contains([]string{"", ConnsOne, ConnsEach}, cond.Conns):
		return fmt.Errorf("conns %q: allowed one (every stream on one connection) or each (a connection per stream)", cond.Conns)
	case !slices.Contains([]string{"", FastSeparate, FastShared}, cond.Fast):
		return fmt.Errorf("fast %q: allowed separate (its own connection) or shared (the slow streams' first)", cond.Fast)
	case !slices.Contains([]string{"", ReadPaced, ReadStall}, cond.Read):
		return fmt.Errorf("read %q: allowed paced (slow.rate) or stall (nothing until the hold is over)", cond.Read)
	case cond.ConnWindow != 0 && (cond.ConnWindow < loadgen.H2DefaultWindow || cond.ConnWindow > loadgen.H2MaxWindow):
		return fmt.Errorf("conn_window %d: allowed 0 (slow.conn_window) or %d (the protocol's initial window) to %d (2^31-1) bytes", int64(cond.ConnWindow),
			loadgen.H2DefaultWindow, loadgen.H2MaxWindow)
	case s != 0 && (s < time.Second || s > stack.MaxSendTimeout || s%time.Second != 0):
		return fmt.Errorf("send_timeout %s: allowed 0 (the proxy's 60s) or whole seconds from 1s to %s", s, stack.MaxSendTimeout)
	}
	return nil
}

func (s SlowSpec) validate() error {
	t := time.Duration(s.Timeout)
	switch {
	case !strings.HasPrefix(s.Path, "/"):
		return fmt.Errorf("slow.path %q: must start with /", s.Path)
	case s.Size < 1 || s.Size > 1<<30:
		return fmt.Errorf("slow.size %d: allowed 1 byte to 1g", int64(s.Size))
	case s.Rate < 1:
		return fmt.Errorf("slow.rate %d: allowed 1 or more bytes a second", int64(s.Rate))
	case s.StreamWindow < 1 || s.StreamWindow > loadgen.H2MaxWindow:
		return fmt.Errorf("slow.stream_window %d: allowed 1 to %d (2^31-1) bytes", int64(s.StreamWindow), loadgen.H2MaxWindow)
	case s.ConnWindow < loadgen.H2DefaultWindow || s.ConnWindow > loadgen.H2MaxWindow:
		return fmt.Errorf("slow.conn_window %d: allowed %d (the protocol's initial window) to %d (2^31-1) bytes", int64(s.ConnWindow), loadgen.H2DefaultWindow,
			loadgen.H2MaxWindow)
	case t <= 0 || t > time.Hour:
		return fmt.Errorf("slow.timeout %s: allowed more than 0 up to 1h", t)
	}
	return nil
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Rep    int
}

// ID is the run's run_id: route (and h3 over HTTP/3), server, streams, their connections,
// /fast's, the read and the send_timeout when set, and rep.
func (r RunSpec) ID() string {
	route := string(r.Route)
	if r.Protocol == ProtocolH3 {
		route += ".h3"
	}
	id := fmt.Sprintf("%s.%s.s%d.%s.fast-%s.%s", route, r.Server.Name(), r.Streams, r.Conns, r.Fast, r.Read)
	if r.SendTimeout > 0 {
		id += ".send" + time.Duration(r.SendTimeout).String()
	}
	if r.ConnWindow > 0 {
		id += fmt.Sprintf(".cwin%d", int64(r.ConnWindow))
	}
	return fmt.Sprintf("%s.rep%d", id, r.Rep)
}

// Runs expands the matrix: every condition once per rep, reps outermost,
// its unset choices named.
func (c *Config) Runs() []RunSpec {
	var runs []RunSpec
	conds := slices.Clone(c.Conditions)
	defaults(conds)
	for rep := 1; rep <= c.Reps; rep++ {
		for _, cond := range conds {
			srv, _ := stack.ParseServer(cond.Server)
			runs = append(runs, RunSpec{Condition: cond, Server: srv, Rep: rep})
		}
	}
	return runs
}

// Hold is how long the slow streams are held: the /fast schedule's end.
func (c *Config) Hold() time.Duration { return time.Duration(c.Fast.Offset + c.Fast.Duration) }
