package buffersweep

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/hops"
	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/stack"
)

// Name is the experiment's name.
const Name = "buffer-sweep"

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common  `yaml:",inline"`
	Server      string        `yaml:"server"` // a registered model: sync-2
	Routes      []stack.Route `yaml:"routes"`
	Sizes       []lab.Size    `yaml:"sizes"` // response body bytes
	Rates       []lab.Size    `yaml:"rates"` // slow read rates, bytes per second
	SlowClients int           `yaml:"slow_clients"`
	// TCPWmemMax and TCPRmemMax are the maxima of net.ipv4.tcp_wmem and
	// tcp_rmem to sweep, each set in a network namespace of its own
	// (every pair of the two lists; an empty list keeps the namespace's
	// default); both empty: the host's settings, no namespace.
	TCPWmemMax []lab.Size `yaml:"tcp_wmem_max,omitempty"`
	TCPRmemMax []lab.Size `yaml:"tcp_rmem_max,omitempty"`
	// FastRate is /fast's open-loop rate during each download.
	FastRate float64 `yaml:"fast_rate"`
	// HopInterval is how often the downloads' bytes are sampled.
	HopInterval lab.Duration `yaml:"hop_interval"`
}

// Published returns the grid: 4, 8, 16 and 32 MiB at 0.5, 1, 2 and
// 4 MiB/s, on the three routes, 2 slow clients against sync-2, under the
// host's socket buffers, once.
func Published() *Config {
	return &Config{Common: lab.PublishedCommon(Name, 1),
		Server: "sync-2", Routes: slices.Clone(stack.Routes),
		Sizes: []lab.Size{4 << 20, 8 << 20, 16 << 20, 32 << 20}, Rates: []lab.Size{512 << 10, 1 << 20, 2 << 20, 4 << 20},
		SlowClients: 2, FastRate: 8, HopInterval: lab.Duration(hops.DefaultInterval)}
}

// Reduce implements lab.Reducer: --quick runs 8 and 16 MiB at 1 and
// 2 MiB/s (one repetition), which includes the published pair.
func (c *Config) Reduce() {
	c.Sizes = []lab.Size{8 << 20, 16 << 20}
	c.Rates = []lab.Size{1 << 20, 2 << 20}
}

// MaxReps implements lab.RepsLimit: every cell's run is a stack of its
// own.
func (c *Config) MaxReps() int { return 100 }

// Servers implements lab.Stacked.
func (c *Config) Servers() []stack.Server {
	if s, err := stack.ParseServer(c.Server); err == nil {
		return []stack.Server{s}
	}
	return nil
}

// Targets implements lab.Targeting.
func (c *Config) Targets() []stack.Target { return []stack.Target{stack.TargetFast, stack.TargetLarge} }

// Flags implements lab.Config.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(lab.SizesFlag(&c.Sizes, "4m,16m"), "sizes", "response sizes, comma-separated (bytes; k, m suffixes) (default 4m,8m,16m,32m)")
	fs.Var(lab.SizesFlag(&c.Rates, "1m,2m"), "rates", "slow read rates in bytes/s, comma-separated (default 512k,1m,2m,4m)")
	fs.Var(lab.SizesFlag(&c.TCPWmemMax, "1m,4m,16m"), "tcp-wmem-max", "net.ipv4.tcp_wmem maxima to sweep, comma-separated (e.g. 1m,4m,16m), each set in a network namespace of its own; needs root (default: the host's, no namespace)")
	fs.Var(lab.SizesFlag(&c.TCPRmemMax, "1m,4m,16m"), "tcp-rmem-max", "net.ipv4.tcp_rmem maxima to sweep, likewise (every pair with --tcp-wmem-max)")
	fs.IntVar(&c.SlowClients, "slow-clients", c.SlowClients, "slow clients per run")
	fs.StringVar(&c.Server, "server", c.Server, "server model, e.g. sync-2, gthread-1x4")
}

// Limits of the grid.
const (
	minSize, maxSize = 64 << 10, 1 << 30
	minRate, maxRate = 16 << 10, 1 << 30
	minMem, maxMem   = 4096, 1 << 30
	maxCells         = 10000
)

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if _, err := stack.ParseServer(c.Server); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if len(c.Routes) == 0 {
		return errors.New("routes: none given")
	}
	for i, r := range c.Routes {
		if !r.Valid() {
			return fmt.Errorf("routes[%d] %q: allowed %s", i, r, stack.RouteList(stack.DownloadRoutes()))
		}
	}
	if err := cmp.Or(inRange("sizes", c.Sizes, minSize, maxSize, false), inRange("rates", c.Rates, minRate, maxRate, false),
		inRange("tcp_wmem_max", c.TCPWmemMax, minMem, maxMem, true), inRange("tcp_rmem_max", c.TCPRmemMax, minMem, maxMem, true)); err != nil {
		return err // the first list's error
	}
	switch {
	case c.SlowClients < 1 || c.SlowClients > 100:
		return fmt.Errorf("slow_clients %d: allowed 1 to 100", c.SlowClients)
	case !(c.FastRate > 0) || c.FastRate > 1000:
		return fmt.Errorf("fast_rate %v: allowed more than 0 up to 1000 requests/s", c.FastRate)
	case c.HopInterval < lab.Duration(10*time.Millisecond) || c.HopInterval > lab.Duration(time.Second):
		return fmt.Errorf("hop_interval %s: allowed 10ms to 1s (the capacity is measured from the hop samples)", time.Duration(c.HopInterval))
	}
	if n := len(c.kernels()) * len(c.Sizes) * len(c.Rates) * len(c.Routes) * c.Reps; n > maxCells {
		return fmt.Errorf("the grid has %d runs: allowed at most %d", n, maxCells)
	}
	return nil
}

// inRange checks a list of sizes: each within lo..hi, no duplicates, and
// not empty unless mayBeEmpty.
func inRange(field string, l []lab.Size, lo, hi int64, mayBeEmpty bool) error {
	if len(l) == 0 && !mayBeEmpty {
		return fmt.Errorf("%s: none given", field)
	}
	for i, v := range l {
		if int64(v) < lo || int64(v) > hi {
			return fmt.Errorf("%s[%d] %s: allowed %s to %s", field, i, bytesize.Format(int64(v)), bytesize.Format(lo), bytesize.Format(hi))
		}
		if slices.Index(l, v) != i {
			return fmt.Errorf("%s[%d] %s: given twice", field, i, bytesize.Format(int64(v)))
		}
	}
	return nil
}

// kernel is one socket buffer setting: maxima (0: the namespace's
// default), or the host's own settings.
type kernel struct {
	host       bool
	wmem, rmem int64
}

// Label names the setting in sweep.csv and directory names.
func (k kernel) Label() string {
	if k.host {
		return kernelnet.HostNamespace
	}
	f := func(v int64) string {
		if v == 0 {
			return "default"
		}
		return bytesize.Format(v)
	}
	return "wmem=" + f(k.wmem) + " rmem=" + f(k.rmem)
}

func (k kernel) dir() string {
	return "kernel-" + strings.NewReplacer("=", "", " ", "-").Replace(k.Label())
}

// kernels lists the settings to run: the host's when no limits are
// given, else every pair of the two lists.
func (c *Config) kernels() []kernel {
	if len(c.TCPWmemMax) == 0 && len(c.TCPRmemMax) == 0 {
		return []kernel{{host: true}}
	}
	w, r := c.TCPWmemMax, c.TCPRmemMax
	if len(w) == 0 {
		w = []lab.Size{0}
	}
	if len(r) == 0 {
		r = []lab.Size{0}
	}
	var out []kernel
	for _, wv := range w {
		for _, rv := range r {
			out = append(out, kernel{wmem: int64(wv), rmem: int64(rv)})
		}
	}
	return out
}
