package stack

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
)

// Deployment is what one run needs from a stack.
type Deployment struct {
	RunID     string
	Route     Route
	Server    Server
	LargeSize int64  // bytes of /large
	LogDir    string // child logs go here
	WorkDir   string // scratch space for this run (configs, temp files)

	// The request side (slow-upload, idle-connections): zero is each
	// component's default.
	//
	// AppTimeout is Gunicorn's --timeout (its default is 30 s): a worker
	// silent for longer is killed, with the request it was working on. An
	// app without the setting refuses a deployment that sets it.
	AppTimeout time.Duration
	// ClientBodyBuffer is the proxy's client_body_buffer_size (NGINX's
	// default 16k): the most of a buffered request body it holds in
	// memory before it writes the body to a temp file.
	ClientBodyBuffer int64
	// ClientHeaderTimeout is the proxy's client_header_timeout (NGINX's
	// default 60 s): how long it waits for a request's header.
	ClientHeaderTimeout time.Duration

	// The response side (stalled-reader, the temp-file cliff,
	// temp-disk-full): zero is each component's default.
	//
	// SendTimeout is the proxy's send_timeout (NGINX's default 60 s): a
	// client that accepts nothing for this long between two writes is
	// closed.
	SendTimeout time.Duration
	// MaxTempFileSize is the proxy's proxy_max_temp_file_size (nil: NGINX's
	// 32m as docs/experiments.md sets it; 0: no temp file, memory buffers only).
	MaxTempFileSize *int64
	// UpstreamHTTP10 is the proxy's proxy_http_version 1.0 (NGINX's
	// default) instead of the 1.1 docs/experiments.md sets: the app then
	// answers a stream of unknown length close-delimited, not chunked, and
	// a buffered proxy holds it until a buffer fills or it ends.
	UpstreamHTTP10 bool
	// ProxyReadTimeout is the proxy's proxy_read_timeout (NGINX's default
	// 60 s): the longest it waits for the upstream between two reads. A
	// long-poll longer than it gets a 504, and a WebSocket whose app sends
	// nothing for this long (no pong to a client's ping either) is closed.
	// The embedded proxy's --upstream-timeout (its connect and send
	// timeouts too).
	ProxyReadTimeout time.Duration
	// TempTmpfs, when above 0, puts the proxy's proxy_temp_path on a tmpfs
	// of this many bytes, mounted in a mount namespace of the proxy's own
	// (so it vanishes with the proxy, on every path).
	TempTmpfs int64

	// TLS, on a TLS route (set by Stack.Start), is the run's certificate:
	// the files the proxy serves and the configuration that trusts it.
	TLS *DeploymentTLS
	// HTTP3 has the proxy serve HTTP/3 as well, on a TLS route: QUIC on
	// the UDP port of its TLS listener's address (Running.ProxyAddr), the
	// run's certificate, HTTP/1.1 to the app as for HTTP/2. Only a proxy
	// that serves it (HTTP3Server) takes such a deployment.
	HTTP3 bool
}

// HTTP3Server is a proxy that can serve HTTP/3 (Deployment.HTTP3).
type HTTP3Server interface {
	ServesHTTP3() bool
}

// checkHTTP3 refuses a deployment with HTTP3 on a route without TLS or a
// proxy that does not serve it.
func checkHTTP3(d Deployment, p Proxy) error {
	if !d.HTTP3 {
		return nil
	}
	if !d.Route.TLS() {
		return fmt.Errorf("route %q: HTTP/3 needs a TLS route (QUIC is always TLS)", d.Route)
	}
	if p == nil {
		return fmt.Errorf("route %q: HTTP/3: the stack has no proxy to serve it", d.Route)
	}
	if h, ok := p.(HTTP3Server); !ok || !h.ServesHTTP3() {
		return fmt.Errorf("proxy %s: does not serve HTTP/3 here (the embedded proxy and caddy do)", p.Name())
	}
	return nil
}

// Limits of the request-side settings.
const (
	MaxAppTimeout          = time.Hour
	MaxClientBodyBuffer    = 1 << 30
	MaxClientHeaderTimeout = time.Hour
	MaxSendTimeout         = time.Hour
	MaxProxyReadTimeout    = time.Hour
	MaxMaxTempFileSize     = 1 << 40
	MinTempTmpfs           = 1 << 20
	MaxTempTmpfs           = 1 << 30
)

// DefaultMaxTempFileSize is proxy_max_temp_file_size as docs/experiments.md
// section 1 sets it (and as both proxies run when the deployment leaves
// MaxTempFileSize nil).
const DefaultMaxTempFileSize = 32 << 20

// MaxTempFile returns the deployment's proxy_max_temp_file_size in bytes.
func (d Deployment) MaxTempFile() int64 {
	if d.MaxTempFileSize == nil {
		return DefaultMaxTempFileSize
	}
	return *d.MaxTempFileSize
}

// Settings are the user's settings for components, from the scenario:
// each component reads and validates its own.
type Settings struct {
	GunicornArgs   []string // extra Gunicorn arguments
	NginxSnippet   string   // extra directives in NGINX's location block
	AcceptWhenFree bool     // embedded gthread workers accept only with a free thread
}

// Component is what apps and proxies have in common.
type Component interface {
	// Name is how stacks and --stack name it: "gunicorn", "nginx".
	Name() string
	// Needs are the programs it runs, which must be on PATH.
	Needs() []string
	// Packages are the Debian packages that install them (make test
	// installs them; error messages name them).
	Packages() []string
	// Real reports whether it is an installed program, to which the
	// published cgroup limits apply (the embedded ones run in cgroups
	// that only account, unless the stack mixes in a real component).
	Real() bool
	// Validate checks the settings it uses before anything starts.
	Validate(Settings) error
}

// App is an app server component.
type App interface {
	Component
	// Models are the server models it runs.
	Models() []Model
	// Start starts the app for d in cgroup cg (nil: no cgroup) and waits
	// until it serves with every worker booted.
	Start(ctx context.Context, d Deployment, s Settings, cg *cgroup.Cgroup) (RunningApp, error)
}

// Proxy is a reverse proxy component.
type Proxy interface {
	Component
	// Start starts the proxy in front of the app at upstream (HOST:PORT),
	// buffering responses or not, in cgroup cg (nil: none).
	Start(ctx context.Context, d Deployment, s Settings, upstream string, buffering bool, cg *cgroup.Cgroup) (RunningProxy, error)
}

// Started is a started component.
type Started interface {
	// Process is its main process; its process group holds the rest.
	Process() *child.Process
	// Addr is the HOST:PORT it serves on.
	Addr() string
	// Stop stops it; safe to call more than once.
	Stop() error
}

// RunningApp is a started app.
type RunningApp interface {
	Started
	// AppSend returns each /large response's app_send_s by request id.
	AppSend(ctx context.Context) (map[string]float64, error)
}

// RunningProxy is a started proxy.
type RunningProxy interface {
	Started
	// TempDirs are where it writes its temp files.
	TempDirs() []string
	// ErrorLogs are the files its error log goes to, as absolute paths
	// (the exporter's error_logs; what a run reads for the proxy's
	// errors).
	ErrorLogs() []string
}

// BufferReporter is a running proxy that reports the responses it is
// relaying, where each one's bytes are: BuffersURL serves them as JSON
// (the embedded proxy's GET /buffers; hops.FetchProxy reads it).
type BufferReporter interface {
	BuffersURL() string
}

// MemoryBufferer is a running proxy that reports nothing of its buffers
// but whose memory per response is fixed by its configuration (NGINX's
// proxy_buffer_size + proxy_buffers): MemoryBuffers is that many bytes,
// the most of a response it holds in memory before it writes a temp file.
type MemoryBufferer interface {
	MemoryBuffers() int64
}

// ModelChecker is an app with models that need more than its programs
// (a Python module, a worker class): ModelInstalled returns nil when model
// can run here, else an error naming what to install.
type ModelChecker interface {
	ModelInstalled(model string) error
}

// ModelValidator is an app whose settings are valid for some models only:
// ValidateModel checks s for a server of model, before anything starts.
type ModelValidator interface {
	ValidateModel(model string, s Settings) error
}

// WorkerWatcher is a running app whose main process outlives a worker
// that dies (Uvicorn's parent neither notices nor replaces one):
// WorkersFailed returns an error naming a worker that is gone.
type WorkerWatcher interface {
	WorkersFailed() error
}

// HeldCounter is a running app that can tell how many long-polls each of
// its workers holds now, by worker (its PID on Gunicorn, its index on the
// embedded app).
type HeldCounter interface {
	LongPollsHeld(ctx context.Context) (map[string]int, error)
}

// MetricsEndpoint is a component that serves Prometheus metrics of its
// own: the job name and HOST:PORT of its /metrics.
type MetricsEndpoint interface {
	MetricsEndpoint() (job, addr string)
}

var (
	apps    []App
	proxies []Proxy
)

// RegisterApp adds an app server; each app's file calls it from init.
func RegisterApp(a App) {
	if slices.ContainsFunc(apps, func(o App) bool { return o.Name() == a.Name() }) {
		panic("stack: app registered twice: " + a.Name())
	}
	apps = append(apps, a)
}

// Apps returns the registered app servers, in registration order.
func Apps() []App { return slices.Clone(apps) }

// RegisterProxy adds a proxy; each proxy's file calls it from init.
func RegisterProxy(p Proxy) {
	if slices.ContainsFunc(proxies, func(o Proxy) bool { return o.Name() == p.Name() }) {
		panic("stack: proxy registered twice: " + p.Name())
	}
	proxies = append(proxies, p)
}

// Installed returns nil when every program c needs is on PATH, else an
// error naming what is missing.
func Installed(c Component) error {
	var missing []string
	for _, bin := range c.Needs() {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s needs %s on PATH (apt-get install %s)", c.Name(), strings.Join(missing, " and "), strings.Join(c.Packages(), " "))
	}
	return nil
}
