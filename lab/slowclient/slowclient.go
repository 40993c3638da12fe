// Package slowclient is the slow-client experiment (docs/experiments.md section
// 1): slow downloads of /large against an open-loop schedule of /fast,
// directly and behind a proxy that buffers or not, on sync and gthread
// workers. It owns the experiment's scenario schema and flags, its run
// (the matrix, each run's load and measurements, resume), its load
// generator (`slowlab slow-load`, a child in the load generator's cgroup
// whose wire lines the session turns into rows and metrics), its
// conditions table (declared once: printed by the CLI, drawn in the
// report) and its report section (Section: the /fast p95, send-vs-receive,
// app-memory and time-series figures, the conditions and every run). Its
// files are recorder's shared rows, which other experiments write too:
// requests.csv, large-responses.csv, resource-samples.csv, runs.csv,
// conditions.csv and hops.csv.
package slowclient

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/hops"
	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// Name is the experiment's name.
const Name = "slow-client"

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common            `yaml:",inline"`
	lab.Beside[Condition] `yaml:",inline"`
	Large                 LargeSpec          `yaml:"large"`
	SlowReader            lab.SlowReaderSpec `yaml:"slow_reader"`
	Hops                  HopsSpec           `yaml:"hops"`
	// skipMayHold: the session logs no MayHold warnings (SkipMayHold).
	skipMayHold bool
}

// HopsSpec is the sampling of where the slow downloads' bytes are
// (hops.csv): every Interval; 0 samples nothing.
type HopsSpec struct {
	Interval lab.Duration `yaml:"interval"`
}

// Condition is one cell of the matrix.
type Condition struct {
	Route       stack.Route `yaml:"route"`
	Server      string      `yaml:"server"` // sync-W, gthread-WxT
	SlowClients int         `yaml:"slow_clients"`
}

// RouteName implements stack.RoutedCondition.
func (c Condition) RouteName() stack.Route { return c.Route }

// ServerName implements stack.RoutedCondition.
func (c Condition) ServerName() string { return c.Server }

// LargeSpec is the slow clients' download.
type LargeSpec struct {
	Path string   `yaml:"path"`
	Size lab.Size `yaml:"size"`
	// Backpressure "off" asks the app to write the whole body without
	// waiting for the socket (/large?backpressure=off), which only the
	// models with Model.BackpressureOff serve (Uvicorn, Node.js); "on"
	// or empty is every server's default.
	Backpressure string `yaml:"backpressure,omitempty"`
}

// url is the download's path and query on the app.
func (l LargeSpec) url() string {
	if l.Backpressure != "off" {
		return l.Path
	}
	if strings.Contains(l.Path, "?") {
		return l.Path + "&backpressure=off"
	}
	return l.Path + "?backpressure=off"
}

// PublishedServer is the main condition's server: Gunicorn sync, 2 workers.
const PublishedServer = "sync-2"

// Published returns the published matrix: 3 routes x {0,1,2} slow clients
// on sync-2, plus gthread 1x4 direct with 2 slow clients; 3 reps, on the
// stack auto chooses, under the published limits.
func Published() *Config {
	c := &Config{Common: lab.PublishedCommon(Name, 3),
		Beside:     lab.Beside[Condition]{Fast: lab.PublishedFast()},
		Large:      LargeSpec{Path: "/large", Size: lab.Size(appserver.DefaultLargeSize)},
		SlowReader: lab.PublishedSlowReader(loadgen.DefaultSlowRate),
		Hops:       HopsSpec{Interval: lab.Duration(hops.DefaultInterval)}}
	for _, r := range stack.Routes {
		for slow := 0; slow <= 2; slow++ {
			c.Conditions = append(c.Conditions, Condition{Route: r, Server: PublishedServer, SlowClients: slow})
		}
	}
	c.Conditions = append(c.Conditions, Condition{Route: stack.RouteDirect, Server: "gthread-1x4", SlowClients: 2})
	return c
}

// Flags implements lab.Config: the experiment has only the shared flags;
// everything else is in its scenario.
func (c *Config) Flags(*flag.FlagSet) {}

// Targets implements lab.Targeting: /fast, and /large when a condition
// has slow clients.
func (c *Config) Targets() []stack.Target {
	if slices.ContainsFunc(c.Conditions, func(cond Condition) bool { return cond.SlowClients > 0 }) {
		return []stack.Target{stack.TargetFast, stack.TargetLarge}
	}
	return []stack.Target{stack.TargetFast}
}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if err := lab.ValidateConditions(c.Conditions, Condition.validate); err != nil {
		return err
	}
	if err := c.Fast.Validate(); err != nil {
		return err
	}
	if !strings.HasPrefix(c.Large.Path, "/") {
		return fmt.Errorf("large.path %q: must start with /", c.Large.Path)
	}
	if c.Large.Size < 0 || c.Large.Size > 1<<30 {
		return fmt.Errorf("large.size %s: allowed 0 to 1g", bytesize.Format(int64(c.Large.Size)))
	}
	if err := c.validateBackpressure(); err != nil {
		return err
	}
	if h := c.Hops.Interval; h != 0 && (h < lab.Duration(10*time.Millisecond) || h > lab.Duration(10*time.Second)) {
		return fmt.Errorf("hops.interval %s: allowed 0 (no hop sampling) or 10ms to 10s", time.Duration(h))
	}
	return c.SlowReader.Validate()
}

// validateBackpressure refuses backpressure off for a server whose app
// always waits for the socket, naming the models that can.
func (c *Config) validateBackpressure() error {
	switch c.Large.Backpressure {
	case "", "on":
		return nil
	case "off":
	default:
		return fmt.Errorf("large.backpressure %q: allowed on, off", c.Large.Backpressure)
	}
	for i, cond := range c.Conditions {
		srv, _ := stack.ParseServer(cond.Server)
		if m, ok := srv.ModelInfo(); !ok || !m.BackpressureOff {
			return fmt.Errorf("conditions[%d].server %q: large.backpressure off needs an app that can write without waiting for the socket (%s)",
				i, cond.Server, strings.Join(stack.BackpressureOffModels(), ", "))
		}
	}
	return nil
}

func (cond Condition) validate() error {
	if !cond.Route.Valid() {
		return fmt.Errorf("route %q: allowed %s", cond.Route, stack.RouteList(stack.DownloadRoutes()))
	}
	if _, err := stack.ParseServer(cond.Server); err != nil {
		return err
	}
	if cond.SlowClients < 0 || cond.SlowClients > 1000 {
		return fmt.Errorf("slow_clients %d: allowed 0 to 1000", cond.SlowClients)
	}
	return nil
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Rep    int
}

// ID is the run's run_id: route, server, slow clients and rep.
func (r RunSpec) ID() string {
	return fmt.Sprintf("%s.%s.slow%d.rep%d", r.Route, r.Server.Name(), r.SlowClients, r.Rep)
}

// Runs expands the matrix: every condition once per rep, reps outermost so
// a drift over time spreads across conditions instead of hitting one.
func (c *Config) Runs() []RunSpec {
	var runs []RunSpec
	for rep := 1; rep <= c.Reps; rep++ {
		for _, cond := range c.Conditions {
			s, _ := stack.ParseServer(cond.Server)
			runs = append(runs, RunSpec{Condition: cond, Server: s, Rep: rep})
		}
	}
	return runs
}

// Duration is a run's intrinsic length: the longer of the fast schedule
// and the slow downloads at their paced rate.
func (c *Config) Duration(slow int) time.Duration {
	d := time.Duration(c.Fast.Offset + c.Fast.Duration)
	if slow > 0 && c.SlowReader.ReadRate > 0 {
		d = max(d, time.Duration(float64(c.Large.Size)/float64(c.SlowReader.ReadRate)*float64(time.Second)))
	}
	return d
}
