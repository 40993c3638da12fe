// Package exportercmd is the exporter's command line: its flags, their
// validation into exporter.Config and exporter.Options, and the HTTP
// server (exporter-toolkit: TLS, basic auth) that serves the metrics until
// the context ends. `slowlab exporter` and the standalone
// `slowlab-exporter` binary both run it; the standalone one links nothing
// but the exporter, so its resident memory is what a production install
// pays (about 18 MiB against 30 MiB for the whole slowlab binary).
//
// What is collected, and how, is package exporter's.
package exportercmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/cliflag"
)

// exporterFlags are the exporter's command-line settings.
type exporterFlags struct {
	configFile    string
	groups        []string
	tempDirs      []string
	procFS        string
	cgroupFS      string
	listen        []string
	webConfig     string
	metricsPath   string
	scrapeTimeout time.Duration
	maxDynamic    int
	logLevel      *promslog.Level
	logFormat     *promslog.Format
	version       bool
	// collector are the collectors' settings: each collector's file
	// declares its flags (exporter.CollectorFlags).
	collector exporter.Options
}

// Synopsis is the command's arguments, for usage lines.
const Synopsis = "[--config FILE] [--group NAME=SELECTOR[,SELECTOR...]]... [flags]"

// UsageError is a mistake in the command line: the caller prints it and
// exits with status 2.
type UsageError = cliflag.UsageError

var usagef = cliflag.Usagef

// Run runs the exporter with the command line args until ctx is done.
// prog names it in the usage text ("slowlab exporter", "slowlab-exporter").
// --help prints the usage to stdout and returns flag.ErrHelp; a bad
// command line returns a UsageError; the log goes to stderr.
func Run(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) error {
	fs := cliflag.NewFlagSet(prog, Synopsis, stdout)
	f := exporterFlags{logLevel: promslog.NewLevel(), logFormat: promslog.NewFormat()}
	fs.StringVar(&f.configFile, "config", "", "YAML `file` with the groups (see exporter/README.md)")
	fs.Var(cliflag.Strings(&f.groups), string(child.ExporterGroup), "a group as `NAME=SELECTOR[,SELECTOR...]`, repeatable; selectors: cgroup:PATH, cgroup-re:REGEX (a group per matching cgroup; in a config file, with group_name), comm:REGEX, cmdline:REGEX, pid:N, tree:N (N and its descendants), port:N (sockets only)")
	fs.Var(cliflag.Strings(&f.tempDirs), string(child.ExporterTempDir), "proxy temp `dir` for groups without temp_dirs, repeatable (default: "+strings.Join(exporter.DefaultTempDirs(), ", ")+")")
	fs.StringVar(&f.procFS, "path.procfs", exporter.DefaultProcFS, "procfs mount `point`")
	fs.StringVar(&f.cgroupFS, "path.cgroupfs", exporter.DefaultCgroupFS, "cgroup filesystem root (v2 mount, or the tmpfs holding v1 hierarchies)")
	fs.Var(cliflag.Strings(&f.listen), string(child.ExporterListen), "`address` to listen on, repeatable (default :9817); port 0 picks a free port (the first address is printed as \"ready listen=IP:PORT\")")
	fs.StringVar(&f.webConfig, "web.config.file", "", "exporter-toolkit web config `file` enabling TLS and basic auth")
	fs.StringVar(&f.metricsPath, "web.telemetry-path", exporter.DefaultMetricsPath, "`path` of the metrics endpoint")
	fs.DurationVar(&f.scrapeTimeout, "scrape.timeout", exporter.DefaultScrapeTimeout, "longest a scrape may take when the scraper sends no X-Prometheus-Scrape-Timeout-Seconds")
	fs.IntVar(&f.maxDynamic, "max-dynamic-groups", exporter.DefaultMaxDynamicGroups, "groups the cgroup-re: selectors may make; further matches are summed into group \"other\"")
	f.logLevel.Set("info")
	f.logFormat.Set("logfmt")
	fs.Var(levelFlag{f.logLevel}, string(child.ExporterLogLevel), "log `level`: debug, info, warn, error")
	fs.Var(formatFlag{f.logFormat}, "log.format", "log `format`: logfmt or json")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	exporter.CollectorFlags(fs, &f.collector)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if f.version {
		fmt.Fprintln(stdout, buildinfo.Text(prog))
		return nil
	}
	cfg, opts, err := f.options()
	if err != nil {
		return err
	}
	if err := checkRoots(cfg, opts); err != nil {
		return err
	}
	logger := promslog.New(&promslog.Config{Level: f.logLevel, Format: f.logFormat, Writer: stderr})

	extra := prometheus.NewRegistry()
	extra.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("slowlab_exporter"))
	b := newBuilder(&f, logger, extra)
	h, collectorNames, err := b.build(cfg, opts)
	if err != nil {
		return usagef("%v", err)
	}
	var current atomic.Pointer[http.Handler]
	current.Store(&h)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) })
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go b.reloadOn(ctx, hup, &current)
	lns, addrs, err := listenAll(f.listen)
	if err != nil {
		return err
	}
	logger.Info("exporter starting", "version", version.Version, "revision", version.GetRevision(), "groups", len(cfg.Groups),
		"collectors", strings.Join(collectorNames, ","), "addresses", strings.Join(addrs, ","))
	fmt.Fprintln(stdout, child.ReadyLine(child.Field{Key: child.KeyListen, Value: addrs[0]}))
	return serve(ctx, lns, handler, f.webConfig, logger)
}

// builder makes the exporter's handler from the flags' config, at start
// and on each reload.
type builder struct {
	f      *exporterFlags
	logger *slog.Logger
	extra  *prometheus.Registry // the exporter's own Go, process and build metrics
	// counters keeps the cgroup counters monotonic across reloads.
	counters *exporter.Counters
}

// newBuilder makes the builder of the process: one counter state for
// every Exporter it builds.
func newBuilder(f *exporterFlags, logger *slog.Logger, extra *prometheus.Registry) builder {
	return builder{f: f, logger: logger, extra: extra, counters: exporter.NewCounters()}
}

func (b builder) build(cfg exporter.Config, opts exporter.Options) (http.Handler, []string, error) {
	opts.Extra, opts.Counters = b.extra, b.counters
	exp, err := exporter.New(cfg, opts, b.logger)
	if err != nil {
		return nil, nil, err
	}
	h, err := exp.Mux(b.f.metricsPath, version.Version)
	return h, exp.EnabledCollectors(), err
}

// reloadOn reads the flags' config again (the config file and the groups
// given with it) on each signal of hup (SIGHUP: systemctl reload) until
// ctx ends, and serves it from then on; a config that does not load is
// logged and the running one kept.
func (b builder) reloadOn(ctx context.Context, hup <-chan os.Signal, current *atomic.Pointer[http.Handler]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, opts, err := b.f.options()
		var h http.Handler
		if err == nil {
			h, _, err = b.build(cfg, opts)
		}
		if err != nil {
			b.logger.Error("reload: config kept as it was", "err", err)
			continue
		}
		current.Store(&h)
		b.logger.Info("reload: config read again", "groups", len(cfg.Groups))
	}
}

// listenAll listens on each address (DefaultListen when none is given),
// and returns the listeners and their addresses; on an error it closes
// those it opened. An address another process holds is a failure; any
// other error (an address that is not one, or not this machine's) is a
// mistake on the command line, a UsageError naming the flag, as slowlab
// target says it.
func listenAll(listen []string) ([]net.Listener, []string, error) {
	if len(listen) == 0 {
		listen = []string{DefaultListen}
	}
	var lns []net.Listener
	var addrs []string
	for _, a := range listen {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				return nil, nil, usagef("--%s %q: %v", child.ExporterListen, a, err)
			}
			return nil, nil, fmt.Errorf("listen %s: %w", a, err)
		}
		lns, addrs = append(lns, ln), append(addrs, ln.Addr().String())
	}
	return lns, addrs, nil
}

// DefaultListen is the address the exporter listens on without
// --web.listen-address: its port in the Prometheus default port
// allocations.
const DefaultListen = ":9817"

// options validates the flags and turns them into the package's config.
func (f exporterFlags) options() (exporter.Config, exporter.Options, error) {
	var cfg exporter.Config
	if f.configFile != "" {
		var err error
		if cfg, err = exporter.LoadConfig(f.configFile); err != nil {
			return cfg, exporter.Options{}, usagef("--config: %v", err)
		}
	}
	for _, g := range f.groups {
		grp, err := exporter.ParseGroupFlag(g)
		if err != nil {
			return cfg, exporter.Options{}, usagef("--group: %v", err)
		}
		cfg.Groups = append(cfg.Groups, grp)
	}
	if len(f.tempDirs) > 0 {
		cfg.TempDirs = f.tempDirs
	}
	if err := cfg.Validate(); err != nil {
		return cfg, exporter.Options{}, usagef("%v", err)
	}
	if f.maxDynamic < 1 {
		return cfg, exporter.Options{}, usagef("--max-dynamic-groups %d: want at least 1", f.maxDynamic)
	}
	if f.scrapeTimeout <= 0 {
		return cfg, exporter.Options{}, usagef("--scrape.timeout %v: want a positive duration", f.scrapeTimeout)
	}
	if !strings.HasPrefix(f.metricsPath, "/") {
		return cfg, exporter.Options{}, usagef("--web.telemetry-path %q: want a path starting with /", f.metricsPath)
	}
	if f.webConfig != "" {
		if err := web.Validate(f.webConfig); err != nil {
			return cfg, exporter.Options{}, usagef("--web.config.file %s: %v", f.webConfig, err)
		}
	}
	opts := f.collector
	opts.ProcFS, opts.CgroupFS, opts.ScrapeTimeout, opts.MaxDynamicGroups = f.procFS, f.cgroupFS, f.scrapeTimeout, f.maxDynamic
	return cfg, opts, nil
}

// checkRoots refuses, at start, a --path.procfs or --path.cgroupfs that
// is not a directory when something reads it: procfs with the process
// collector, the cgroup filesystem with the cgroup collector or a group
// selecting by cgroup (cgroup:, cgroup-re:). Otherwise the exporter would
// serve, and that collector fail every scrape. A cgroup filesystem that
// appears only later is not waited for: the exporter runs on a host whose
// cgroups are mounted at boot, as its procfs is.
func checkRoots(cfg exporter.Config, opts exporter.Options) error {
	enabled := func(name string) bool {
		for _, c := range exporter.Collectors() {
			if c.Name == name {
				if v, ok := opts.Collectors[name]; ok {
					return v
				}
				return c.Enabled
			}
		}
		return false
	}
	selectsCgroups := false
	for _, g := range cfg.Groups {
		for _, s := range g.Selectors {
			selectsCgroups = selectsCgroups || strings.HasPrefix(s, "cgroup:") || strings.HasPrefix(s, "cgroup-re:")
		}
	}
	for _, r := range []struct {
		flag, path string
		used       bool
	}{
		{"path.procfs", opts.ProcFS, enabled("process")},
		{"path.cgroupfs", opts.CgroupFS, enabled("cgroup") || selectsCgroups},
	} {
		if !r.used {
			continue
		}
		fi, err := os.Stat(r.path)
		switch {
		case err != nil:
			return usagef("--%s %q: %v", r.flag, r.path, errors.Unwrap(err))
		case !fi.IsDir():
			return usagef("--%s %q: not a directory", r.flag, r.path)
		}
	}
	return nil
}

// serve runs the HTTP server on every listener (TLS and basic auth per
// the web config file) until ctx is done, then shuts it down gracefully.
func serve(ctx context.Context, lns []net.Listener, handler http.Handler, webConfig string, logger *slog.Logger) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		addrs := []string{ln.Addr().String()}
		go func() {
			errc <- web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &addrs, WebConfigFile: &webConfig}, logger)
		}()
	}
	select {
	case err := <-errc:
		srv.Close()
		for range len(lns) - 1 {
			<-errc
		}
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	for range lns {
		if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
			err = serveErr
		}
	}
	return err
}

func init() {
	// Set at build time by the package and the image (-ldflags -X
	// github.com/prometheus/common/version.Version=...); else the module's
	// version as the go command stamped it.
	if version.Version == "" {
		version.Version = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version.Version = bi.Main.Version
		}
	}
}

// levelFlag and formatFlag are promslog's flag values, whose String the
// flag package may call on a zero value (for --help).
type (
	levelFlag  struct{ *promslog.Level }
	formatFlag struct{ *promslog.Format }
)

func (l levelFlag) String() string {
	if l.Level == nil {
		return ""
	}
	return l.Level.String()
}

func (f formatFlag) String() string {
	if f.Format == nil {
		return ""
	}
	return f.Format.String()
}

func (l levelFlag) Set(v string) error {
	if err := l.Level.Set(v); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

func (f formatFlag) Set(v string) error {
	if err := f.Format.Set(v); err != nil {
		return errors.New("want logfmt or json")
	}
	return nil
}
