package lab

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Route is how the load generator reaches the app.
type Route string

// Routes of the slow-client experiment.
const (
	RouteDirect       Route = "direct"
	RouteBufferingOff Route = "proxy-buffering-off"
	RouteBufferingOn  Route = "proxy-buffering-on"
)

// Routes lists the valid routes.
var Routes = []Route{RouteDirect, RouteBufferingOff, RouteBufferingOn}

// Valid reports whether r is a known route.
func (r Route) Valid() bool {
	for _, x := range Routes {
		if r == x {
			return true
		}
	}
	return false
}

// ServerSpec is the app server's worker model.
type ServerSpec struct {
	Model   string `yaml:"model"`
	Workers int    `yaml:"workers"`
	Threads int    `yaml:"threads"`
}

// Name is the CSV server label: sync-2, gthread-1x4.
func (s ServerSpec) Name() string {
	if s.Model == "gthread" {
		return fmt.Sprintf("gthread-%dx%d", s.Workers, s.Threads)
	}
	if s.Model == "async" {
		return "async"
	}
	return fmt.Sprintf("%s-%d", s.Model, s.Workers)
}

// ParseServer reads a server label back: sync-2, gthread-1x4, async.
func ParseServer(s string) (ServerSpec, error) {
	if s == "async" {
		return ServerSpec{Model: "async", Workers: 1, Threads: 1}, nil
	}
	model, size, ok := strings.Cut(s, "-")
	bad := fmt.Errorf("server %q: want sync-W, gthread-WxT or async", s)
	if !ok {
		return ServerSpec{}, bad
	}
	switch model {
	case "sync":
		w, err := strconv.Atoi(size)
		if err != nil || w < 1 {
			return ServerSpec{}, bad
		}
		return ServerSpec{Model: model, Workers: w, Threads: 1}, nil
	case "gthread":
		ws, ts, ok := strings.Cut(size, "x")
		w, err1 := strconv.Atoi(ws)
		t, err2 := strconv.Atoi(ts)
		if !ok || err1 != nil || err2 != nil || w < 1 || t < 1 {
			return ServerSpec{}, bad
		}
		return ServerSpec{Model: model, Workers: w, Threads: t}, nil
	}
	return ServerSpec{}, bad
}

// Deployment is what one run needs from a stack.
type Deployment struct {
	RunID     string
	Route     Route
	Server    ServerSpec
	LargeSize int64
	LogDir    string // child logs go here
	WorkDir   string // scratch space for this run (proxy temp files, configs)
}

// Stack starts the system under test for one run.
type Stack interface {
	Name() string
	Start(ctx context.Context, d Deployment) (Running, error)
}

// Running is a started stack.
type Running interface {
	// URL is the base URL the load generator targets (proxy or app).
	URL() string
	// PIDs maps component (app, proxy) to the process the lab started.
	PIDs() map[string]int
	// Groups maps component (app, proxy) to the exporter selectors that
	// find its processes (tree:PID, cgroup:PATH); the lab adds loadgen.
	Groups() map[string][]string
	// TempDirs are where the proxy writes its temp files.
	TempDirs() []string
	// AppSend returns each /large response's app_send_s by request id.
	AppSend(ctx context.Context) (map[string]float64, error)
	// Failed reports a component that died during the run.
	Failed() error
	// Stop tears everything down; safe to call more than once.
	Stop() error
}

// executable returns the slowlab binary that children run: this one.
func executable() (string, error) {
	if p := os.Getenv("SLOWLAB_EXECUTABLE"); p != "" {
		return p, nil
	}
	return os.Executable()
}
