package stalledreader

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// Name is the experiment's name.
const Name = "stalled-reader"

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common            `yaml:",inline"`
	lab.Beside[Condition] `yaml:",inline"`
	Client                ClientSpec `yaml:"client"`
	// Size is /large's size (the deployment's LargeSize).
	Size lab.Size `yaml:"size"`
}

// Condition is one cell of the matrix.
type Condition struct {
	Route stack.Route `yaml:"route"` // direct, proxy-buffering-off, proxy-buffering-on
	// Server is a registered model (sync-2, gthread-1x4, ...), or "async":
	// the stack's event-loop server, whatever it is.
	Server  string `yaml:"server"`
	Mode    string `yaml:"mode"` // stall or slow
	Clients int    `yaml:"clients"`
	// AppTimeout is the app's timeout (Gunicorn's --timeout); 0 leaves
	// the app's default (Gunicorn's is 30 s).
	AppTimeout lab.Duration `yaml:"app_timeout,omitempty"`
	// SendTimeout is the proxy's send_timeout; 0 leaves its default
	// (60 s). Only on a proxied route.
	SendTimeout lab.Duration `yaml:"send_timeout,omitempty"`
}

// ClientSpec is how the clients read.
type ClientSpec struct {
	Path string `yaml:"path"`
	// Rate paces a slow reader throughout and a stalled one until it
	// stalls, in bytes per second.
	Rate lab.Size `yaml:"rate"`
	// StallAfter is how many body bytes a stalled reader reads first.
	StallAfter lab.Size `yaml:"stall_after"`
	// Stall is how long a stalled reader then reads nothing.
	Stall lab.Duration `yaml:"stall"`
	// GiveUp bounds every download from its request: past it the client
	// closes, whatever it got.
	GiveUp   lab.Duration `yaml:"give_up"`
	RcvBuf   lab.Size     `yaml:"rcvbuf"`    // SO_RCVBUF before connect; 0 the kernel's
	ReadSize lab.Size     `yaml:"read_size"` // at most this much per read
}

// Published values: timeouts well inside the stall, which is well inside
// the client's bound.
const (
	PublishedAppTimeout  = 10 * time.Second
	PublishedSendTimeout = 5 * time.Second
	PublishedStall       = 20 * time.Second
	PublishedGiveUp      = 40 * time.Second
	PublishedSize        = 16 << 20
	PublishedRate        = 16 << 10
)

// Published returns the matrix, 2 clients each: stalled readers on
// sync-2 on the three routes with a 10 s app timeout and (proxied) a 5 s
// send_timeout; a 16 KiB/s reader on sync-2 direct and behind the
// buffering proxy; stalled readers on gthread 1x4 (10 s timeout) and the
// stack's async server (none), direct. /large is 16 MiB; a stall lasts
// 20 s, the client gives up at 40 s; 3 repetitions, /fast at 8 req/s for
// 9 s.
func Published() *Config {
	c := &Config{Common: lab.PublishedCommon(Name, 3), Size: PublishedSize,
		Beside: lab.Beside[Condition]{Fast: lab.PublishedFast()},
		Client: ClientSpec{Path: "/large", Rate: PublishedRate, StallAfter: 64 << 10, Stall: lab.Duration(PublishedStall),
			GiveUp: lab.Duration(PublishedGiveUp), RcvBuf: loadgen.DefaultSlowRcvBuf, ReadSize: loadgen.DefaultSlowReadSize}}
	app, send := lab.Duration(PublishedAppTimeout), lab.Duration(PublishedSendTimeout)
	c.Conditions = []Condition{
		{Route: stack.RouteDirect, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: app},
		{Route: stack.RouteBufferingOff, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: app, SendTimeout: send},
		{Route: stack.RouteBufferingOn, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: app, SendTimeout: send},
		{Route: stack.RouteDirect, Server: "sync-2", Mode: ModeSlow, Clients: 2, AppTimeout: app},
		{Route: stack.RouteBufferingOn, Server: "sync-2", Mode: ModeSlow, Clients: 2, AppTimeout: app, SendTimeout: send},
		{Route: stack.RouteDirect, Server: "gthread-1x4", Mode: ModeStall, Clients: 2, AppTimeout: app},
		{Route: stack.RouteDirect, Server: stack.AsyncServer, Mode: ModeStall, Clients: 2},
	}
	return c
}

// Reduce implements lab.Reducer: --quick runs stalled readers on sync-2
// on the three routes, a slow reader direct and stalled readers on the
// async server, once each, with 3 s timeouts, a 6 s stall, a 12 s bound
// (twice a longer stall the user gave, which the session applies again)
// and 4 MiB of /large (unless the size was set), /fast for 5 s.
func (c *Config) Reduce() {
	if c.Size == Published().Size {
		c.Size = 4 << 20
	}
	stall := c.Client.Stall
	c.Client.Stall, c.Client.GiveUp = lab.Duration(6*time.Second), lab.Duration(12*time.Second)
	if stall != Published().Client.Stall {
		c.Client.GiveUp = max(c.Client.GiveUp, 2*stall)
	}
	c.Fast.Duration = lab.Duration(5 * time.Second)
	short := lab.Duration(3 * time.Second)
	c.Conditions = []Condition{
		{Route: stack.RouteDirect, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: short},
		{Route: stack.RouteBufferingOff, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: lab.Duration(10 * time.Second), SendTimeout: short},
		{Route: stack.RouteBufferingOn, Server: "sync-2", Mode: ModeStall, Clients: 2, AppTimeout: short, SendTimeout: short},
		{Route: stack.RouteDirect, Server: "sync-2", Mode: ModeSlow, Clients: 1, AppTimeout: short},
		{Route: stack.RouteDirect, Server: stack.AsyncServer, Mode: ModeStall, Clients: 2},
	}
}

// Flags implements lab.Config: everything else is in the scenario.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var((*lab.SizeFlag)(&c.Size), "size", "/large's size in bytes (k, m, g suffixes), e.g. 16m")
	fs.Var((*lab.DurationFlag)(&c.Client.Stall), "stall", "how long a stalled reader reads nothing, e.g. 20s")
	fs.Var((*lab.DurationFlag)(&c.Client.GiveUp), "give-up", "the client's bound on every download, e.g. 40s")
}

// Limits: beyond them a value is a typo.
const (
	minSize, maxSize = 1 << 10, 1 << 30
	maxClients       = 100
	maxBound         = time.Hour
)

// Validate implements lab.Config, naming each field by its YAML path.
// Timeouts must be ordered: the client's bound outlives its stall and
// every timeout it is meant to see fire. No conditions is reported first,
// then the size and the client, whose bound each condition is checked by.
func (c *Config) Validate() error {
	if len(c.Conditions) == 0 {
		return lab.ErrNoConditions
	}
	if c.Size < minSize || c.Size > maxSize {
		return fmt.Errorf("size %s: allowed 1k to 1g", bytesize.Format(int64(c.Size)))
	}
	if err := c.Client.validate(c.Size); err != nil {
		return err
	}
	giveUp := time.Duration(c.Client.GiveUp)
	if err := lab.ValidateConditions(c.Conditions, func(cond Condition) error { return cond.validate(giveUp) }); err != nil {
		return err
	}
	return c.Fast.Validate()
}

// validate checks the client's reading by loadgen's slow-reader rules
// (its rate is their read_rate), then its path, stall and bound.
func (cs ClientSpec) validate(size lab.Size) error {
	r := loadgen.SlowReader{Rate: float64(cs.Rate), RcvBuf: int(cs.RcvBuf), ReadSize: int(cs.ReadSize)}
	if err := r.Validate(); err != nil {
		return lab.SettingPath("client.", err, map[string]string{loadgen.SettingReadRate: "rate"})
	}
	switch {
	case !strings.HasPrefix(cs.Path, "/"):
		return fmt.Errorf("client.path %q: must start with /", cs.Path)
	case cs.StallAfter < 0 || cs.StallAfter >= size:
		return fmt.Errorf("client.stall_after %s: allowed 0 to less than size (%s)", bytesize.Format(int64(cs.StallAfter)), bytesize.Format(int64(size)))
	case cs.Stall < lab.Duration(time.Second) || time.Duration(cs.Stall) > maxBound:
		return fmt.Errorf("client.stall %s: allowed 1s to 1h", time.Duration(cs.Stall))
	case cs.GiveUp <= cs.Stall || time.Duration(cs.GiveUp) > maxBound:
		return fmt.Errorf("client.give_up %s: must outlast client.stall (%s), up to 1h", time.Duration(cs.GiveUp), time.Duration(cs.Stall))
	}
	return nil
}

func (cond Condition) validate(giveUp time.Duration) error {
	if !slices.Contains(stack.Routes, cond.Route) {
		return fmt.Errorf("route %q: allowed %s", cond.Route, stack.RouteList(stack.Routes))
	}
	async := cond.Server == stack.AsyncServer
	if !async {
		s, err := stack.ParseServer(cond.Server)
		if err != nil {
			return err
		}
		info, _ := s.ModelInfo() // the zero Model, not async, when unknown
		async = info.Async
	}
	wholeSeconds := func(d lab.Duration) bool {
		return d >= lab.Duration(time.Second) && time.Duration(d) <= maxBound && d%lab.Duration(time.Second) == 0
	}
	switch {
	case cond.Mode != ModeStall && cond.Mode != ModeSlow:
		return fmt.Errorf("mode %q: allowed %s, %s", cond.Mode, ModeStall, ModeSlow)
	case cond.Clients < 1 || cond.Clients > maxClients:
		return fmt.Errorf("clients %d: allowed 1 to %d", cond.Clients, maxClients)
	case cond.AppTimeout != 0 && !wholeSeconds(cond.AppTimeout):
		return fmt.Errorf("app_timeout %s: allowed 0 (the app's default) or whole seconds from 1s to 1h", time.Duration(cond.AppTimeout))
	case cond.AppTimeout != 0 && async:
		return fmt.Errorf("app_timeout %s: server %s is an event-loop server, which has no worker timeout; leave it 0", time.Duration(cond.AppTimeout), cond.Server)
	case cond.AppTimeout != 0 && time.Duration(cond.AppTimeout) >= giveUp:
		return fmt.Errorf("app_timeout %s: must be shorter than client.give_up (%s), or the client leaves before it can fire", time.Duration(cond.AppTimeout), giveUp)
	case cond.SendTimeout != 0 && !cond.Route.Proxied():
		return fmt.Errorf("send_timeout %s: route %s has no proxy; leave it 0", time.Duration(cond.SendTimeout), cond.Route)
	case cond.SendTimeout != 0 && !wholeSeconds(cond.SendTimeout):
		return fmt.Errorf("send_timeout %s: allowed 0 (the proxy's default) or whole seconds from 1s to 1h", time.Duration(cond.SendTimeout))
	case cond.SendTimeout != 0 && time.Duration(cond.SendTimeout) >= giveUp:
		return fmt.Errorf("send_timeout %s: must be shorter than client.give_up (%s), or the client leaves before it can fire", time.Duration(cond.SendTimeout), giveUp)
	}
	return nil
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Rep    int
}

// ID is the run's run_id: route, server, mode, clients, the timeouts set,
// and rep.
func (r RunSpec) ID() string {
	id := fmt.Sprintf("%s.%s.%s%d", r.Route, r.Server.Name(), r.Mode, r.Clients)
	if r.AppTimeout != 0 {
		id += fmt.Sprintf(".app%ds", int(time.Duration(r.AppTimeout)/time.Second))
	}
	if r.SendTimeout != 0 {
		id += fmt.Sprintf(".send%ds", int(time.Duration(r.SendTimeout)/time.Second))
	}
	return fmt.Sprintf("%s.rep%d", id, r.Rep)
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
// and a download (a stall and the rest, or the whole body at the rate),
// at most the client's bound.
func (c *Config) Duration(mode string) time.Duration {
	d := time.Duration(c.Fast.Offset + c.Fast.Duration)
	dl := time.Duration(float64(c.Size) / float64(c.Client.Rate) * float64(time.Second))
	if mode == ModeStall {
		dl = time.Duration(c.Client.Stall) + time.Duration(float64(c.Client.StallAfter)/float64(c.Client.Rate)*float64(time.Second))
	}
	dl = min(dl, time.Duration(c.Client.GiveUp))
	return max(d, dl)
}
