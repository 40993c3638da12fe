package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// Defaults for Options.
const (
	DefaultProcFS        = "/proc"
	DefaultCgroupFS      = "/sys/fs/cgroup"
	DefaultScrapeTimeout = 10 * time.Second
	DefaultWchanTop      = 10
	DefaultMetricsPath   = "/metrics"
)

// Options are the exporter's settings other than the groups.
type Options struct {
	ProcFS   string // root of procfs; DefaultProcFS when empty
	CgroupFS string // root of the cgroup mounts; DefaultCgroupFS when empty
	// Collectors enables or disables collectors by name; collectors not
	// named keep their default (see Collectors).
	Collectors map[string]bool
	// ScrapeTimeout bounds a scrape without an
	// X-Prometheus-Scrape-Timeout-Seconds header, and Collect.
	ScrapeTimeout time.Duration
	// WchanTop is how many wait-channel names each group reports before
	// folding the rest into "other". 0 means DefaultWchanTop; negative
	// reports only "other".
	WchanTop int
	// MaxDynamicGroups bounds the groups cgroup-re: selectors make; the
	// matches over it are summed into the group "other".
	// DefaultMaxDynamicGroups when 0; negative is an error.
	MaxDynamicGroups int
	// Own holds the settings of a collector that has no field here, under
	// its name: the flags its file declares (registerCollector) store
	// them, and its factory reads them, so adding a collector with
	// settings touches its file only.
	Own map[string]any
	// ErrorLogs are GROUP=FILE proxy error logs added to the named groups
	// of the config (the errorlog collector's --collector.errorlog.file).
	ErrorLogs []string
	// Counters keeps the cgroup counters from going back when the cgroups
	// behind a series change (counters.go); nil: the Exporter's own. The
	// command gives every Exporter it builds (one per reload) the same
	// one, so a reload does not reset them.
	Counters *Counters
	// Extra is served by Handler after the exporter's own metrics (e.g. a
	// registry with the Go runtime and process collectors).
	Extra prometheus.Gatherer

	// Test seams: fixture socket dumps and faulty fd walkers.
	dumpTCP func(family uint8, ports []uint16) ([]tcpSocket, error)
	fds     *fdWalker
}

func (o Options) withDefaults() Options {
	if o.MaxDynamicGroups == 0 {
		o.MaxDynamicGroups = DefaultMaxDynamicGroups
	}
	if o.ProcFS == "" {
		o.ProcFS = DefaultProcFS
	}
	if o.CgroupFS == "" {
		o.CgroupFS = DefaultCgroupFS
	}
	if o.ScrapeTimeout <= 0 {
		o.ScrapeTimeout = DefaultScrapeTimeout
	}
	switch {
	case o.WchanTop == 0:
		o.WchanTop = DefaultWchanTop
	case o.WchanTop < 0:
		o.WchanTop = 0
	}
	return o
}

func (env collectorEnv) fdWalker() fdWalker {
	if env.opts.fds != nil {
		return *env.opts.fds
	}
	return newFDWalker(env.opts.ProcFS)
}

var (
	collectorSuccess = prometheus.NewDesc("slowlab_exporter_collector_success",
		"1 if the collector's last update read everything, 0 if any part failed (its other metrics are still served).", []string{"collector"}, nil)
	collectorDuration = prometheus.NewDesc("slowlab_exporter_collector_duration_seconds",
		"Time the collector's last update took.", []string{"collector"}, nil)
)

// Exporter collects the groups' metrics on every scrape. It is a
// prometheus.Collector, so it can also be registered in a caller's registry.
type Exporter struct {
	opts       Options
	logger     *slog.Logger
	resolver   resolver
	names      []string
	collectors map[string]Collector

	mu      sync.Mutex
	failing map[string]bool // collector -> last update failed (log on change only)
	fds     *fdCache        // the last finished scrape's fd walks (see fdCache.next)
}

var _ prometheus.Collector = (*Exporter)(nil)

// New validates cfg and creates the enabled collectors.
func New(cfg Config, opts Options, logger *slog.Logger) (*Exporter, error) {
	cfg.Groups = slices.Clone(cfg.Groups)
	if err := addErrorLogs(&cfg, opts.ErrorLogs); err != nil {
		return nil, err
	}
	groups, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	if opts.MaxDynamicGroups < 0 {
		return nil, fmt.Errorf("max dynamic groups %d: want at least 1", opts.MaxDynamicGroups)
	}
	opts = opts.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for name := range opts.Collectors {
		if _, ok := collectors[name]; !ok {
			return nil, fmt.Errorf("unknown collector %q (allowed: %s)", name, strings.Join(collectorNames(), ", "))
		}
	}
	e := &Exporter{
		opts:       opts,
		logger:     logger,
		resolver:   resolver{procFS: opts.ProcFS, cgroupFS: opts.CgroupFS, groups: groups, maxDyn: opts.MaxDynamicGroups, slots: &dynSlots{}},
		collectors: map[string]Collector{},
		failing:    map[string]bool{},
	}
	env := collectorEnv{opts: opts, logger: logger, groups: groups}
	for _, info := range Collectors() {
		enabled := info.Enabled
		if v, ok := opts.Collectors[info.Name]; ok {
			enabled = v
		}
		if !enabled {
			continue
		}
		c, err := collectors[info.Name].factory(env)
		if err != nil {
			return nil, err
		}
		e.names = append(e.names, info.Name)
		e.collectors[info.Name] = c
	}
	return e, nil
}

func collectorNames() []string {
	names := make([]string, 0, len(collectors))
	for n := range collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// EnabledCollectors lists the collectors this exporter runs, sorted.
func (e *Exporter) EnabledCollectors() []string { return append([]string(nil), e.names...) }

// Targets resolves the groups as a scrape does (the dynamic groups
// included, with their cap, but without changing what the next scrape
// keeps): for a tool or test that checks a config against a host's
// processes and cgroups.
func (e *Exporter) Targets(ctx context.Context) ([]Target, error) {
	r := e.resolver
	r.slots = nil
	targets, _, err := r.resolve(ctx)
	return targets, err
}

// Describe sends nothing: the exporter is an unchecked collector because the
// metrics it sends depend on what the kernel provides.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect runs one scrape bounded by Options.ScrapeTimeout.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.ScrapeTimeout)
	defer cancel()
	e.CollectContext(ctx, ch)
}

// CollectContext resolves the groups once, runs every collector
// concurrently and reports each one's success and duration. A failing
// collector never fails the scrape: its error is logged once when it starts
// failing, and its success metric is 0.
func (e *Exporter) CollectContext(ctx context.Context, ch chan<- prometheus.Metric) {
	targets, dyn, dynErr := e.resolver.resolve(ctx)
	if e.resolver.dynamic() {
		// Resolving the dynamic groups is reported as if it were a
		// collector: its success, and its error logged on change.
		ch <- prometheus.MustNewConstMetric(dynamicGroups, prometheus.GaugeValue, float64(dyn.groups))
		ch <- prometheus.MustNewConstMetric(dynamicOther, prometheus.GaugeValue, float64(dyn.other))
		ch <- prometheus.MustNewConstMetric(dynamicDropped, prometheus.CounterValue, dyn.dropped)
		for _, name := range dyn.newly {
			e.logger.Warn("dynamic group over --max-dynamic-groups: its cgroups are summed into group \"other\" while the groups that have series of their own keep them",
				"group", name, "max_dynamic_groups", e.resolver.maxDyn)
		}
		ch <- prometheus.MustNewConstMetric(collectorSuccess, prometheus.GaugeValue, map[bool]float64{true: 1}[dynErr == nil], "cgroup-re")
		e.logResult("cgroup-re", dynErr)
	}
	e.mu.Lock()
	last := e.fds
	e.mu.Unlock()
	cache := newFDCache(collectorEnv{opts: e.opts}.fdWalker())
	if last != nil {
		cache = last.next()
	}
	for i := range targets {
		targets[i].fds = cache
	}
	var wg sync.WaitGroup
	for _, name := range e.names {
		wg.Go(func() {
			start := time.Now()
			err := e.collectors[name].Update(ctx, targets, ch)
			ch <- prometheus.MustNewConstMetric(collectorDuration, prometheus.GaugeValue, time.Since(start).Seconds(), name)
			success := 1.0
			if err != nil {
				success = 0
			}
			ch <- prometheus.MustNewConstMetric(collectorSuccess, prometheus.GaugeValue, success, name)
			e.logResult(name, err)
		})
	}
	wg.Wait()
	e.mu.Lock()
	e.fds = cache
	e.mu.Unlock()
}

// logResult logs a collector's error when it starts failing and once when it
// recovers, not on every scrape (the recorder scrapes every 200 ms).
func (e *Exporter) logResult(name string, err error) {
	e.mu.Lock()
	was := e.failing[name]
	e.failing[name] = err != nil
	e.mu.Unlock()
	switch {
	case err != nil && !was:
		e.logger.Warn("collector failed; serving what it could read", "collector", name, "err", err)
	case err != nil:
		e.logger.Debug("collector failed", "collector", name, "err", err)
	case was:
		e.logger.Info("collector recovered", "collector", name)
	}
}

// scrape binds one request's context to the exporter.
type scrape struct {
	e   *Exporter
	ctx context.Context
}

func (s scrape) Describe(chan<- *prometheus.Desc)    {}
func (s scrape) Collect(ch chan<- prometheus.Metric) { s.e.CollectContext(s.ctx, ch) }

// Gatherer returns the exporter's metrics followed by Options.Extra, each
// gather bounded by Options.ScrapeTimeout.
func (e *Exporter) Gatherer() prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	if e.opts.Extra == nil {
		return reg
	}
	return prometheus.Gatherers{reg, e.opts.Extra}
}

// Handler serves the metrics: OpenMetrics when the scraper asks for it, text
// otherwise. The scrape is bounded by 90% of the scraper's
// X-Prometheus-Scrape-Timeout-Seconds (leaving time to send the answer), or
// by Options.ScrapeTimeout, whichever is shorter.
func (e *Exporter) Handler() http.Handler {
	errLog := slog.NewLogLogger(e.logger.Handler(), slog.LevelError)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout(r.Header, e.opts.ScrapeTimeout))
		defer cancel()
		reg := prometheus.NewRegistry()
		reg.MustRegister(scrape{e, ctx})
		var g prometheus.Gatherer = reg
		if e.opts.Extra != nil {
			g = prometheus.Gatherers{reg, e.opts.Extra}
		}
		promhttp.HandlerFor(g, promhttp.HandlerOpts{
			ErrorLog:          errLog,
			ErrorHandling:     promhttp.ContinueOnError,
			EnableOpenMetrics: true,
		}).ServeHTTP(w, r)
	})
}

// scrapeTimeout picks the timeout for one scrape from the request headers.
func scrapeTimeout(h http.Header, max time.Duration) time.Duration {
	v := h.Get("X-Prometheus-Scrape-Timeout-Seconds")
	if v == "" {
		return max
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 || secs > max.Seconds() {
		return max
	}
	return time.Duration(secs * 0.9 * float64(time.Second))
}

// Mux serves the landing page at / and the metrics at metricsPath.
func (e *Exporter) Mux(metricsPath, version string) (http.Handler, error) {
	if metricsPath == "" {
		metricsPath = DefaultMetricsPath
	}
	mux := http.NewServeMux()
	mux.Handle(metricsPath, e.Handler())
	if metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "slowlab exporter",
			Description: "cgroup CPU/throttling/memory, process states and wait channels, proxy temp files and TCP socket queues per group",
			Version:     version,
			Links:       []web.LandingLinks{{Address: metricsPath, Text: "Metrics"}},
			Profiling:   "false",
		})
		if err != nil {
			return nil, fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}
