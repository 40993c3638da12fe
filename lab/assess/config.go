package assess

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/internal/cliflag"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// Name is the command's name, and the results directory's prefix.
const Name = "assess"

// Limits of the settings.
const (
	MaxClients     = 1024
	DefaultClients = 64
	DefaultBudget  = 5 * time.Minute
	DefaultIdleMax = 120 * time.Second
	// MinLarge is the smallest large response the slow-reader probe
	// takes: below it the kernel's socket buffers absorb the whole
	// response, and no reader can hold a worker.
	MinLarge = 1 << 20
)

// Config is an assessment: the stack (managed, or the user's external
// one), the probes to run and their bounds.
type Config struct {
	lab.Header    `yaml:",inline"`
	lab.StackSpec `yaml:",inline"`
	// Server and Route are the managed stack's deployment (an external
	// stack's are its external: block's).
	Server string      `yaml:"server"`
	Route  stack.Route `yaml:"route"`
	Probes []Probe     `yaml:"probes"`
	// MaxClients is the last level tried: 1, 2, 4, ... up to it.
	MaxClients int `yaml:"max_clients"`
	// Window is how long /fast runs open loop at each level, at FastRate
	// requests a second; Offset after the level's clients are in place.
	Window   lab.Duration `yaml:"window"`
	FastRate float64      `yaml:"fast_rate"`
	Offset   lab.Duration `yaml:"offset"`
	// IdleMax bounds how long the idle, slowloris and stalled-reader
	// probes keep their last level's clients to see how the server ends
	// them (for stalled readers: whether /fast comes back meanwhile).
	IdleMax lab.Duration `yaml:"idle_max"`
	// Budget bounds the whole assessment.
	Budget lab.Duration `yaml:"budget"`
	// FailOn are the thresholds under which the command fails (exit 1).
	FailOn string `yaml:"fail_on,omitempty"`
	// The managed stack's paths and sizes (an external stack's URLs are
	// taken as they are).
	Paths      Paths    `yaml:"paths"`
	LargeSize  lab.Size `yaml:"large_size"`
	UploadSize lab.Size `yaml:"upload_size"`

	// Shard is "I/N": this process is shard I of N assessing one external
	// stack together (see shard.go), all started at StartAt (RFC 3339).
	// "" (or "0/1") and "": one process.
	Shard   string `yaml:"shard,omitempty"`
	StartAt string `yaml:"start_at,omitempty"`

	// ServerWmem is, for an external stack, the most its app's socket
	// send buffer holds on the server (its net.ipv4.tcp_wmem maximum, or
	// twice min(SO_SNDBUF, net.core.wmem_max) if the app sets SO_SNDBUF):
	// the path model predicts an external stack's path only with it.
	// 0: not given.
	ServerWmem lab.Size `yaml:"server_wmem,omitempty"`

	// Selectors of the external stack, given as flags.
	ext extFlags
	// probesGiven: --probes was given (else an HTTP/2 front gets
	// H2DefaultProbes).
	probesGiven bool
	// slotSettle replaces shardSettle, a slot's tail on the shards'
	// clock, when not zero: a test that knows its stack recovers at once
	// (a loopback app whose idle clients leave when closed,
	// TestAssessShards) sets a shorter one. No flag or scenario field sets
	// it: every shard derives the published clock.
	slotSettle time.Duration
}

// Paths are the requests' paths on a managed stack.
type Paths struct {
	Fast   string `yaml:"fast"`
	Large  string `yaml:"large"`
	Upload string `yaml:"upload"`
	Stream string `yaml:"stream"`
}

// extFlags are the flags that describe an external stack; given, they
// make the scenario's external: block.
type extFlags struct {
	fast, large, upload, stream string
	app, proxy, tempDirs        []string
	http2                       bool
}

// Default is an assessment of sync-2 direct on the stack auto chooses,
// the default probes (every HTTP/1.1 one), up to 64 clients within 5
// minutes.
func Default() *Config {
	return &Config{Header: lab.Header{Experiment: Name}, StackSpec: lab.PublishedStackSpec(),
		Server: "sync-2", Route: stack.RouteDirect, Probes: slices.Clone(DefaultProbes), MaxClients: DefaultClients,
		Window: lab.Duration(2 * time.Second), FastRate: 25, Offset: lab.Duration(250 * time.Millisecond),
		IdleMax: lab.Duration(DefaultIdleMax), Budget: lab.Duration(DefaultBudget),
		Paths:     Paths{Fast: "/fast", Large: "/large", Upload: "/upload", Stream: "/longpoll"},
		LargeSize: 16 << 20, UploadSize: 16 << 20}
}

// Flags implements lab.Config.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Server, "server", c.Server, "managed stack: the app server, "+stack.ModelSyntax())
	fs.Var((*routeFlag)(&c.Route), "route", fmt.Sprintf("managed stack: the route, one of %v", allRoutes()))
	parse := func(s string) (Probe, error) { c.probesGiven = true; return ParseProbe(s) }
	fs.Var(&cliflag.List[Probe]{To: &c.Probes, Parse: parse, Want: fmt.Sprintf("probes, comma-separated, of %s", names(Probes))},
		"probes", "the probes to run, comma-separated, of "+names(Probes)+" (default on an HTTP/1.1 front: "+names(DefaultProbes)+
			"; on an HTTP/2 front, an h2-* route, caddy-tls or --http2: "+names(H2DefaultProbes)+")")
	fs.IntVar(&c.MaxClients, "max-clients", c.MaxClients, fmt.Sprintf("the last level: 1, 2, 4, ... up to this many clients (1 to %d)", MaxClients))
	fs.Var((*lab.DurationFlag)(&c.Window), "window", "how long /fast runs open loop at each level")
	fs.Float64Var(&c.FastRate, "fast-rate", c.FastRate, "/fast requests a second during a window")
	fs.Var((*lab.DurationFlag)(&c.IdleMax), "idle-max", "how long the idle, slowloris and stalled-reader probes keep their last clients to see how the server ends them")
	fs.Var((*lab.DurationFlag)(&c.Budget), "budget", "bound on the whole assessment; a probe stops at the level that would not fit")
	fs.StringVar(&c.FailOn, "fail-on", "", "exit 1 when a probe's threshold is below a bound, e.g. 'slow-readers<8,idle<100': PROBE<N passes only when the probe held with N-1 clients or more, every one in place, and degraded with none fewer than N; a bound the assessment could not judge exits 3")
	fs.Var((*lab.SizeFlag)(&c.LargeSize), "large-size", "managed stack: the large response's size (at least 1m)")
	fs.Var((*lab.SizeFlag)(&c.UploadSize), "upload-size", "the slow uploads' body size")
	fs.StringVar(&c.Shard, "shard", "", "run shard I (from 0) of N of the assessment of an external stack: at every level it holds the clients numbered I, I+N, ...; shard 0 also measures /fast and gives the verdicts (e.g. 1/4; with --start-at)")
	fs.StringVar(&c.StartAt, "start-at", "", "with --shard: the instant (RFC 3339, e.g. 2026-12-05T10:00:00Z) every shard starts its clock at; each level then starts at the same instant on every shard")
	fs.Var((*lab.SizeFlag)(&c.ServerWmem), "server-wmem", "external stack, direct route: the most the app's socket send buffer holds on the server: its net.ipv4.tcp_wmem maximum (the third value), or twice min(SO_SNDBUF, net.core.wmem_max) if the app sets SO_SNDBUF; without it what the path holds is not predicted (this machine's settings are not the server's)")
	fs.StringVar(&c.ext.fast, "fast-url", "", "external stack: the fast request's URL (gives --stack external)")
	fs.StringVar(&c.ext.large, "large-url", "", "external stack: a large response's URL (slow and stalled readers)")
	fs.StringVar(&c.ext.upload, "upload-url", "", "external stack: a URL that takes a POST body (slow uploads)")
	fs.StringVar(&c.ext.stream, "stream-url", "", "external stack: a long-poll or SSE URL (held streams)")
	fs.Var(cliflag.Strings(&c.ext.app), "app", "external stack: an exporter selector of the app's processes (cgroup:PATH, tree:PID, comm:REGEX, port:N, ...); repeatable; none (nor --proxy, --temp-dir): the processes are not on this machine, and the verdicts come without what held the stack")
	fs.Var(cliflag.Strings(&c.ext.proxy), "proxy", "external stack: an exporter selector of the proxy's processes; repeatable")
	fs.Var(cliflag.Strings(&c.ext.tempDirs), "temp-dir", "external stack: the proxy's temp-file directory; repeatable")
	fs.BoolVar(&c.ext.http2, "http2", false, "external stack: its front speaks HTTP/2 (http:// URLs: cleartext with prior knowledge; https://: TLS with ALPN h2, the system's roots), as loadgen --http2: /fast and the probes h2-slow-streams and h2-streams-one-conn go over it (the HTTP/1.1 probes are refused)")
}

// routeFlag is --route.
type routeFlag stack.Route

func (r *routeFlag) String() string { return string(*r) }
func (r *routeFlag) Set(v string) error {
	if err := checkRoute(stack.Route(v)); err != nil {
		return fmt.Errorf("%q: %v", v, err)
	}
	*r = routeFlag(v)
	return nil
}

// checkRoute refuses a route assess does not know. On the HTTP/2 routes
// only the probes that speak HTTP/2 go through (Validate).
func checkRoute(r stack.Route) error {
	if !r.Known() {
		return fmt.Errorf("allowed %v", allRoutes())
	}
	return nil
}

// allRoutes lists every route checkRoute takes, as --route's help and its
// refusal name them: the download routes (every proxy's), the upload
// routes, then the HTTP/2 ones (NGINX's and the proxies' own TLS routes,
// such as caddy-tls).
func allRoutes() []stack.Route {
	out := stack.DownloadRoutes()
	for _, r := range slices.Concat(stack.UploadRoutes, stack.HTTP2Routes()) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// ApplyExternal makes the scenario's external: block from the external flags,
// when --fast-url was given: the stack becomes external. Then, --probes
// not given, a front that speaks HTTP/2 gets H2DefaultProbes.
func (c *Config) ApplyExternal() error {
	if err := c.applyExternal(); err != nil {
		return err
	}
	if !c.probesGiven && c.http2() {
		c.Probes = slices.Clone(H2DefaultProbes)
	}
	return nil
}

func (c *Config) applyExternal() error {
	e := c.ext
	given := e.large != "" || e.upload != "" || e.stream != "" || len(e.app) > 0 || len(e.proxy) > 0 || len(e.tempDirs) > 0 || e.http2
	if e.fast == "" {
		if given {
			return errors.New("--large-url, --upload-url, --stream-url, --app, --proxy, --temp-dir and --http2 describe an external stack: give --fast-url too")
		}
		return nil
	}
	route := c.Route
	spec := &lab.ExternalSpec{FastURL: e.fast, LargeURL: e.large, UploadURL: e.upload, StreamURL: e.stream, Route: route, Server: c.Server, HTTP2: e.http2}
	switch {
	case len(e.app) == 0 && len(e.proxy) == 0 && len(e.tempDirs) == 0:
		// No processes named: they are not on this machine (a shard of an
		// assessment run from another machine); only /fast is measured.
		spec.Unseen = true
	case len(e.proxy) > 0 && !route.Proxied():
		return errors.New("--proxy: the stack has a proxy; say how it buffers responses with --route proxy-buffering-on or proxy-buffering-off")
	case len(e.proxy) == 0 && route.Proxied():
		return fmt.Errorf("--route %s: the stack has a proxy; give its processes with --proxy", route)
	default:
		spec.Groups, spec.TempDirs = map[string][]string{"app": e.app}, e.tempDirs
		if len(e.proxy) > 0 {
			spec.Groups["proxy"] = e.proxy
		}
	}
	c.StackSpec.Stack, c.StackSpec.External = stack.NameExternal, spec
	return nil
}

// Validate implements lab.Config.
func (c *Config) Validate() error {
	if _, err := stack.ParseServer(c.Server); err != nil {
		return fmt.Errorf("server: %v", err)
	}
	if err := checkRoute(c.Route); err != nil {
		return fmt.Errorf("route %q: %v", c.Route, err)
	}
	if len(c.Probes) == 0 {
		return fmt.Errorf("probes: none; allowed %s", names(Probes))
	}
	for i, p := range c.Probes {
		if !slices.Contains(Probes, p) {
			return fmt.Errorf("probes: %q: allowed %s", p, names(Probes))
		}
		if slices.Contains(c.Probes[:i], p) {
			return fmt.Errorf("probes: %s given twice: an assessment runs each probe once", p)
		}
	}
	if err := c.checkProtocol(); err != nil {
		return err
	}
	switch {
	case c.MaxClients < 1 || c.MaxClients > MaxClients:
		return fmt.Errorf("max_clients %d: allowed 1 to %d", c.MaxClients, MaxClients)
	case c.Window < lab.Duration(500*time.Millisecond) || c.Window > lab.Duration(time.Minute):
		return fmt.Errorf("window %s: allowed 500ms to 1m", time.Duration(c.Window))
	case !(c.FastRate >= 1) || c.FastRate > 1000:
		return fmt.Errorf("fast_rate %v: allowed 1 to 1000 requests/s", c.FastRate)
	case c.FastRate*time.Duration(c.Window).Seconds() < 20:
		return fmt.Errorf("fast_rate %v over window %s: %v requests, want at least 20 for a p95", c.FastRate,
			time.Duration(c.Window), c.FastRate*time.Duration(c.Window).Seconds())
	case c.Offset < 0 || c.Offset > lab.Duration(time.Minute):
		return fmt.Errorf("offset %s: allowed 0 to 1m", time.Duration(c.Offset))
	case c.IdleMax < lab.Duration(time.Second) || c.IdleMax > lab.Duration(time.Hour):
		return fmt.Errorf("idle_max %s: allowed 1s to 1h", time.Duration(c.IdleMax))
	case c.Budget < lab.Duration(10*time.Second) || c.Budget > lab.Duration(24*time.Hour):
		return fmt.Errorf("budget %s: allowed 10s to 24h", time.Duration(c.Budget))
	case c.UploadSize < 1 || c.UploadSize > 1<<30:
		return fmt.Errorf("upload_size %s: allowed 1 byte to 1g", bytesize.Format(int64(c.UploadSize)))
	case c.StackSpec.Stack != stack.NameExternal && slices.ContainsFunc(c.Probes, readsLarge) && c.LargeSize < MinLarge:
		return fmt.Errorf("large_size %s: the slow-reader probe wants at least 1m (the kernel's socket buffers absorb a smaller response: no reader can hold a worker with it)",
			bytesize.Format(int64(c.LargeSize)))
	case c.LargeSize > 1<<30:
		return fmt.Errorf("large_size %s: at most 1g", bytesize.Format(int64(c.LargeSize)))
	}
	for _, p := range []struct{ name, path string }{{"fast", c.Paths.Fast}, {"large", c.Paths.Large}, {"upload", c.Paths.Upload}, {"stream", c.Paths.Stream}} {
		if !strings.HasPrefix(p.path, "/") {
			return fmt.Errorf("paths.%s %q: must start with /", p.name, p.path)
		}
	}
	if _, err := checkBounds(c.FailOn, c.Probes, c.MaxClients); err != nil {
		return fmt.Errorf("fail_on: %w", err)
	}
	if err := c.validateServerWmem(); err != nil {
		return err
	}
	return c.validateShard()
}

// http2 reports whether the stack's front speaks HTTP/2: an HTTP/2 route,
// or an external stack given --http2 (external.http2).
func (c *Config) http2() bool {
	if e := c.StackSpec.External; e != nil {
		return e.HTTP2
	}
	return c.Route.HTTP2()
}

// checkProtocol refuses, by name, a probe that cannot go through the
// stack's front: an HTTP/1.1 probe where it speaks HTTP/2 (NGINX's
// cleartext HTTP/2 listener takes nothing else), an HTTP/2 one where it
// speaks HTTP/1.1.
func (c *Config) checkProtocol() error {
	h2 := c.http2()
	front := fmt.Sprintf("route %s", c.Routes()[0])
	if c.StackSpec.External != nil {
		front = "the external stack"
	}
	for _, p := range c.Probes {
		switch {
		case p.speaks(h2):
		case h2:
			return fmt.Errorf("probes: %s speaks HTTP/1.1 and %s speaks HTTP/2: choose of %s", p, front, names(H2DefaultProbes))
		default:
			return fmt.Errorf("probes: %s speaks HTTP/2 and %s speaks HTTP/1.1: give an HTTP/2 route (%v), or --http2 for an external stack whose front speaks it",
				p, front, stack.HTTP2Routes())
		}
	}
	return nil
}

// Limits of server_wmem: tcp_wmem's maximum cannot be under a page.
const minServerWmem, maxServerWmem = 4096, 1 << 30

// validateServerWmem refuses a server_wmem given where the model does not
// take it (a managed stack, whose server is this machine; a proxied
// route, whose proxy's buffers the model does not read) or out of range.
func (c *Config) validateServerWmem() error {
	w := int64(c.ServerWmem)
	switch {
	case w == 0:
		return nil
	case c.StackSpec.Stack != stack.NameExternal:
		return fmt.Errorf("server_wmem %s: for an external stack only (a managed stack's server is this machine, whose settings the model reads)", bytesize.Format(w))
	case c.Routes()[0].Proxied():
		return fmt.Errorf("server_wmem %s: route %s has a proxy, whose buffers the model does not read: nothing to predict with it", bytesize.Format(w), c.Routes()[0])
	case w < minServerWmem || w > maxServerWmem:
		return fmt.Errorf("server_wmem %s: allowed %s to %s", bytesize.Format(w), bytesize.Format(minServerWmem), bytesize.Format(maxServerWmem))
	}
	return nil
}

// readsLarge reports whether p's clients read the large response, whose
// size must hold a worker.
func readsLarge(p Probe) bool { return p == ProbeSlowReaders || p.http2() }

// TakesHTTP2 implements lab.TakesHTTP2: the HTTP/2 probes go through a
// front that speaks it.
func (c *Config) TakesHTTP2() bool { return true }

// TakesUnseen implements lab.TakesUnseen: an external stack whose
// processes are not on this machine gets verdicts from /fast, without
// what held it.
func (c *Config) TakesUnseen() bool { return true }

// Servers implements lab.Stacked.
func (c *Config) Servers() []stack.Server {
	srv, err := stack.ParseServer(c.Server)
	if err != nil {
		return nil
	}
	return []stack.Server{srv}
}

// Stack implements lab.Stacked.
func (c *Config) Stack() *lab.StackSpec { return &c.StackSpec }

// Head implements lab.Config.
func (c *Config) Head() *lab.Header { return &c.Header }

// Targets implements lab.Targeting: the kinds of request the chosen
// probes send, each needing its URL on an external stack.
func (c *Config) Targets() []stack.Target {
	out := []stack.Target{stack.TargetFast}
	for _, p := range c.Probes {
		if t := p.target(); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Routes implements lab.Routed.
func (c *Config) Routes() []stack.Route {
	if c.StackSpec.External != nil {
		return []stack.Route{c.StackSpec.External.Route}
	}
	return []stack.Route{c.Route}
}
