package exporter

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector is one data source. Update sends the metrics it could read for
// every target and returns an error when any part failed; what it sent still
// counts (a partial scrape), and the error only sets the collector's success
// metric to 0. Update stops early when ctx is done.
type Collector interface {
	Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error
}

// Target is one configured group resolved for a single scrape.
type Target struct {
	Group  string
	Cgroup string // path below the cgroup root; "" when the group has none
	// Cgroups are the cgroups of group "other", which sums the matches of
	// dynamic groups beyond --max-dynamic-groups (Cgroup is then "").
	Cgroups []string
	// Labels are a dynamic group's captures, added to each of its metrics.
	Labels   prometheus.Labels
	PIDs     []int    // sorted, unique; processes that exited may remain
	Ports    []int    // local ports from port: selectors
	TempDirs []string // absolute, cleaned
	// ErrorLogs are the proxy's error logs (absolute, cleaned); none for a
	// dynamic group.
	ErrorLogs []string
	// Err is why resolving the group's processes failed; PIDs may then be
	// incomplete, and collectors that use them report the failure.
	Err error

	fds   *fdCache   // shared by the scrape's collectors; nil outside a scrape
	descs *descCache // a dynamic group's Descs, for this scrape
}

// dynamic reports whether t is made by cgroup-re: selectors: a dynamic
// group, or "other", their sum over the cap.
func (t Target) dynamic() bool { return t.Labels != nil || len(t.Cgroups) > 0 }

// ErrNoData marks an optional source the kernel does not provide (memory.peak
// before Linux 5.19); the metric is left out and the collector still succeeds.
var ErrNoData = errors.New("no data")

// collectorEnv is what a collector factory may use.
type collectorEnv struct {
	opts   Options
	logger *slog.Logger
	groups []group // the configured groups, for a collector that keeps state per group
}

type collectorInfo struct {
	name    string
	help    string
	enabled bool
	factory func(collectorEnv) (Collector, error)
	flags   func(fs *flag.FlagSet, o *Options)
}

// collectors is filled by registerCollector from each collector file's init.
var collectors = map[string]collectorInfo{}

// registerCollector makes a collector known; it is the one place a new
// collector is added: CollectorFlags derives --collector.NAME and
// --no-collector.NAME from it, and declares the flags of the collector's
// own settings with flags (nil when it has none), which the collector's
// file defines, as node_exporter's collectors do.
func registerCollector(name, help string, enabled bool, factory func(collectorEnv) (Collector, error), flags func(fs *flag.FlagSet, o *Options)) {
	if _, dup := collectors[name]; dup {
		panic("exporter: collector registered twice: " + name)
	}
	collectors[name] = collectorInfo{name: name, help: help, enabled: enabled, factory: factory, flags: flags}
}

// CollectorFlags declares on fs every registered collector's flags, in
// name order: --collector.NAME and --no-collector.NAME (the last given
// wins), setting o.Collectors, and the flags of its own settings, setting
// its fields of o.
func CollectorFlags(fs *flag.FlagSet, o *Options) {
	if o.Collectors == nil {
		o.Collectors = map[string]bool{}
	}
	if o.Own == nil {
		o.Own = map[string]any{}
	}
	for _, c := range Collectors() {
		fs.Var(enableFlag{o.Collectors, c.Name, true}, "collector."+c.Name, fmt.Sprintf("enable the %s collector: %s (default %t)", c.Name, c.Help, c.Enabled))
		fs.Var(enableFlag{o.Collectors, c.Name, false}, "no-collector."+c.Name, "disable the "+c.Name+" collector")
		if f := collectors[c.Name].flags; f != nil {
			f(fs, o)
		}
	}
}

// enableFlag is --collector.NAME (on=true) or --no-collector.NAME
// (on=false).
type enableFlag struct {
	m    map[string]bool
	name string
	on   bool
}

func (f enableFlag) String() string   { return "" }
func (f enableFlag) IsBoolFlag() bool { return true }
func (f enableFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	f.m[f.name] = b == f.on
	return nil
}

// CollectorInfo describes a registered collector for flag wiring.
type CollectorInfo struct {
	Name    string
	Help    string
	Enabled bool // enabled unless Options.Collectors says otherwise
}

// Collectors lists the registered collectors sorted by name.
func Collectors() []CollectorInfo {
	out := make([]CollectorInfo, 0, len(collectors))
	for _, c := range collectors {
		out = append(out, CollectorInfo{Name: c.name, Help: c.help, Enabled: c.enabled})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// isGone reports whether err means the process, fd or cgroup went away
// while it was being read: ENOENT, ESRCH, or ENODEV (a cgroup file read
// after its cgroup was removed).
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.ENODEV)
}

// permissionHint adds what to do about a permission error on /proc/PID.
func permissionHint(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w (reading another user's /proc/PID/fd needs the same uid or CAP_SYS_PTRACE, plus CAP_DAC_READ_SEARCH to list it)", err)
	}
	return err
}

// partialErrors collects the errors of one Update, keeping the first few
// and counting the rest so one unreadable process does not flood the log.
type partialErrors struct {
	errs  []error
	count int
}

const maxKeptErrors = 3

func (p *partialErrors) add(err error) {
	if err == nil {
		return
	}
	p.count++
	if len(p.errs) < maxKeptErrors {
		p.errs = append(p.errs, err)
	}
}

func (p *partialErrors) err() error {
	if p.count == 0 {
		return nil
	}
	// One line, not errors.Join's one per error: it goes to a log line.
	format := strings.Repeat("; %w", len(p.errs))[2:]
	args := make([]any, 0, len(p.errs)+1)
	for _, e := range p.errs {
		args = append(args, e)
	}
	if p.count > len(p.errs) {
		format += " (and %d more)"
		args = append(args, p.count-len(p.errs))
	}
	return fmt.Errorf(format, args...)
}
