package slowupload

import (
	"cmp"
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
const Name = "slow-upload"

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common            `yaml:",inline"`
	lab.Beside[Condition] `yaml:",inline"`
	Upload                UploadSpec `yaml:"upload"`
	// ClientBodyBuffer is the proxy's client_body_buffer_size; 0 leaves
	// the proxy's default (16k).
	ClientBodyBuffer lab.Size `yaml:"client_body_buffer,omitempty"`
}

// Condition is one cell of the matrix.
type Condition struct {
	Route stack.Route `yaml:"route"` // direct, proxy-request-buffering-on, proxy-request-buffering-off
	// Server is a registered model (sync-2, gthread-1x4, ...), or "async":
	// the stack's event-loop server, whatever it is (the embedded async
	// model; on the real stack the first async model it has, with one
	// worker, such as uvicorn-1).
	Server    string `yaml:"server"`
	Uploaders int    `yaml:"uploaders"`
	// Size replaces upload.size for this condition; 0 keeps it.
	Size lab.Size `yaml:"size,omitempty"`
	// AppTimeout is the app's timeout (Gunicorn's --timeout); 0 leaves
	// the app's default (Gunicorn's is 30 s).
	AppTimeout lab.Duration `yaml:"app_timeout,omitempty"`
}

// UploadSpec is how the slow clients upload.
type UploadSpec struct {
	Path      string       `yaml:"path"`
	Size      lab.Size     `yaml:"size"`       // bytes
	Rate      lab.Size     `yaml:"rate"`       // bytes per second
	SndBuf    lab.Size     `yaml:"sndbuf"`     // SO_SNDBUF before connect; 0 the kernel's
	WriteSize lab.Size     `yaml:"write_size"` // at most this much per write
	Timeout   lab.Duration `yaml:"timeout"`    // each upload, from connect to the response
}

// Published values.
const (
	// PublishedAppTimeout is the app timeout of the main conditions:
	// longer than an upload, so that only the timeout condition measures
	// Gunicorn's kill (its default, 30 s, is shorter than 16 MiB at
	// 512 KiB/s).
	PublishedAppTimeout = 60 * time.Second
	// The timeout condition: a 10 s timeout, a 20 s upload (10 MiB at
	// 512 KiB/s).
	TimeoutConditionTimeout = 10 * time.Second
	TimeoutConditionSize    = 10 << 20
)

// Published returns the matrix: the three upload routes x 1, 2, 4
// uploaders on sync-2; gthread 1x4 direct with 2 and 4; the stack's async
// server direct with 4; and sync-2 direct with one upload outliving a 10 s
// app timeout. 16 MiB at 512 KiB/s each, 3 repetitions, /fast at 8 req/s
// for 9 s.
func Published() *Config {
	c := &Config{Common: lab.PublishedCommon(Name, 3),
		Beside: lab.Beside[Condition]{Fast: lab.PublishedFast()},
		Upload: UploadSpec{Path: "/upload", Size: 16 << 20, Rate: loadgen.DefaultUploadRate, SndBuf: loadgen.DefaultUploadSndBuf,
			WriteSize: loadgen.DefaultUploadWriteSize, Timeout: lab.Duration(2 * time.Minute)}}
	long := lab.Duration(PublishedAppTimeout)
	for _, r := range stack.UploadRoutes {
		for _, n := range []int{1, 2, 4} {
			c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Uploaders: n, AppTimeout: long})
		}
	}
	c.Conditions = append(c.Conditions,
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Uploaders: 2, AppTimeout: long},
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Uploaders: 4, AppTimeout: long},
		Condition{Route: stack.RouteDirect, Server: stack.AsyncServer, Uploaders: 4},
		timeoutCondition())
	return c
}

func timeoutCondition() Condition {
	return Condition{Route: stack.RouteDirect, Server: "sync-2", Uploaders: 1, Size: TimeoutConditionSize,
		AppTimeout: lab.Duration(TimeoutConditionTimeout)}
}

// Reduce implements lab.Reducer: --quick runs 2 uploads on sync-2 on each
// route, gthread 1x4 and async direct, and the timeout condition, once
// each; uploads of 8 MiB unless --size set another size.
func (c *Config) Reduce() {
	long := lab.Duration(PublishedAppTimeout)
	if c.Upload.Size == Published().Upload.Size {
		c.Upload.Size = 8 << 20
	}
	c.Conditions = nil
	for _, r := range stack.UploadRoutes {
		c.Conditions = append(c.Conditions, Condition{Route: r, Server: "sync-2", Uploaders: 2, AppTimeout: long})
	}
	c.Conditions = append(c.Conditions,
		Condition{Route: stack.RouteDirect, Server: "gthread-1x4", Uploaders: 2, AppTimeout: long},
		Condition{Route: stack.RouteDirect, Server: stack.AsyncServer, Uploaders: 2},
		timeoutCondition())
}

// Flags implements lab.Config: everything else is in the scenario.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var((*lab.SizeFlag)(&c.Upload.Size), "size", "each upload's size in bytes (k, m, g suffixes), e.g. 16m")
	fs.Var((*lab.SizeFlag)(&c.Upload.Rate), "rate", "each uploader's rate in bytes/s (k, m suffixes), e.g. 512k")
}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if err := lab.ValidateConditions(c.Conditions, Condition.validate); err != nil {
		return err
	}
	if b := c.ClientBodyBuffer; b != 0 && (b < 1<<10 || b > stack.MaxClientBodyBuffer) {
		return fmt.Errorf("client_body_buffer %s: allowed 0 (the proxy's default) or 1k to %s", bytesize.Format(int64(b)), bytesize.Format(stack.MaxClientBodyBuffer))
	}
	if err := c.Fast.Validate(); err != nil {
		return err
	}
	return c.Upload.validate()
}

// Limits of the upload settings: beyond them a value is a typo.
const (
	maxSize      = 1 << 30
	minRate      = 1 << 10
	maxRate      = 1 << 30
	maxSndBuf    = 64 << 20
	maxWriteSize = 16 << 20
)

func (cond Condition) validate() error {
	if !slices.Contains(uploadRoutes(), cond.Route) {
		return fmt.Errorf("route %q: allowed %s", cond.Route, stack.RouteList(uploadRoutes()))
	}
	if cond.Server != stack.AsyncServer {
		if _, err := stack.ParseServer(cond.Server); err != nil {
			return err
		}
	}
	switch {
	case cond.Uploaders < 0 || cond.Uploaders > 1000:
		return fmt.Errorf("uploaders %d: allowed 0 to 1000", cond.Uploaders)
	case cond.Size < 0 || cond.Size > maxSize:
		return fmt.Errorf("size %s: allowed 0 (upload.size) or 1 byte to 1g", bytesize.Format(int64(cond.Size)))
	case cond.AppTimeout != 0 && (cond.AppTimeout < lab.Duration(time.Second) || cond.AppTimeout > lab.Duration(stack.MaxAppTimeout) || cond.AppTimeout%lab.Duration(time.Second) != 0):
		return fmt.Errorf("app_timeout %s: allowed 0 (the app's default) or whole seconds from 1s to %s", time.Duration(cond.AppTimeout), stack.MaxAppTimeout)
	}
	return nil
}

// uploadRoutes are the routes an upload can take: NGINX's request-body
// routes, and the routes the proxies own (each says whether it buffers a
// request body).
func uploadRoutes() []stack.Route { return slices.Concat(stack.UploadRoutes, stack.OwnedRoutes()) }

func (u UploadSpec) validate() error {
	switch {
	case !strings.HasPrefix(u.Path, "/"):
		return fmt.Errorf("upload.path %q: must start with /", u.Path)
	case u.Size < 1 || u.Size > maxSize:
		return fmt.Errorf("upload.size %s: allowed 1 byte to 1g", bytesize.Format(int64(u.Size)))
	case u.Rate < minRate || u.Rate > maxRate:
		return fmt.Errorf("upload.rate %s: allowed 1k to 1g bytes/s", bytesize.Format(int64(u.Rate)))
	case u.SndBuf < 0 || u.SndBuf > maxSndBuf:
		return fmt.Errorf("upload.sndbuf %s: allowed 0 (the kernel's) or up to 64m", bytesize.Format(int64(u.SndBuf)))
	case u.WriteSize < 1 || u.WriteSize > maxWriteSize:
		return fmt.Errorf("upload.write_size %s: allowed 1 byte to 16m", bytesize.Format(int64(u.WriteSize)))
	case u.Timeout <= 0 || time.Duration(u.Timeout) > time.Hour:
		return fmt.Errorf("upload.timeout %s: allowed more than 0 up to 1h", time.Duration(u.Timeout))
	}
	return nil
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Size   int64
	Rep    int
}

// ID is the run's run_id: route, server, uploaders, size when the
// condition sets one, app timeout when set, and rep.
func (r RunSpec) ID() string {
	id := fmt.Sprintf("%s.%s.up%d", r.Route, r.Server.Name(), r.Uploaders)
	if r.Condition.Size != 0 {
		id += "." + bytesize.Format(r.Size)
	}
	if r.AppTimeout != 0 {
		id += fmt.Sprintf(".timeout%ds", int(time.Duration(r.AppTimeout)/time.Second))
	}
	return fmt.Sprintf("%s.rep%d", id, r.Rep)
}

// Runs expands the matrix on st: every condition once per rep, reps
// outermost; "async" becomes the stack's event-loop server, and a
// condition naming it on a stack without one is left out (skipped names
// them).
func (c *Config) Runs(st stack.Stack) ([]RunSpec, []string) {
	return stack.ExpandRuns(st, c.Reps, c.Conditions, func(cond Condition, srv stack.Server, rep int) RunSpec {
		return RunSpec{Condition: cond, Server: srv, Size: int64(cmp.Or(cond.Size, c.Upload.Size)), Rep: rep}
	})
}

// RouteName is the condition's route (with ServerName, a stack.RoutedCondition).
func (c Condition) RouteName() stack.Route { return c.Route }

// ServerName is the server the condition names ("async" among them).
func (c Condition) ServerName() string { return c.Server }

// Duration is a run's intrinsic length: the longer of the fast schedule
// and an upload at its paced rate.
func (c *Config) Duration(size int64) time.Duration {
	return max(time.Duration(c.Fast.Offset+c.Fast.Duration), time.Duration(float64(size)/float64(c.Upload.Rate)*float64(time.Second)))
}
