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
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/cliflag"
)

// exporterFlags are the exporter's command-line settings.
type exporterFlags struct {
	configFile    string
	groups        []string
	tempDirs      []string
	procFS        string
	cgroupFS      string
	listen        string
	webConfig     string
	metricsPath   string
	scrapeTimeout time.Duration
	maxDynamic    int
	logLevel      string
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
	f := exporterFlags{}
	fs.StringVar(&f.configFile, "config", "", "YAML `file` with the groups (see exporter/README.md)")
	fs.Var(cliflag.Strings(&f.groups), string(child.ExporterGroup), "a group as `NAME=SELECTOR[,SELECTOR...]`, repeatable; selectors: cgroup:PATH, cgroup-re:REGEX (a group per matching cgroup; in a config file, with group_name), comm:REGEX, cmdline:REGEX, pid:N, tree:N (N and its descendants), port:N (sockets only)")
	fs.Var(cliflag.Strings(&f.tempDirs), string(child.ExporterTempDir), "proxy temp `dir` for groups without temp_dirs, repeatable (default: "+strings.Join(exporter.DefaultTempDirs(), ", ")+")")
	fs.StringVar(&f.procFS, "path.procfs", exporter.DefaultProcFS, "procfs mount `point`")
	fs.StringVar(&f.cgroupFS, "path.cgroupfs", exporter.DefaultCgroupFS, "cgroup filesystem root (v2 mount, or the tmpfs holding v1 hierarchies)")
	fs.StringVar(&f.listen, string(child.ExporterListen), ":9817", "`address` to listen on; port 0 picks a free port (printed as \"ready listen=IP:PORT\")")
	fs.StringVar(&f.webConfig, "web.config.file", "", "exporter-toolkit web config `file` enabling TLS and basic auth")
	fs.StringVar(&f.metricsPath, "web.telemetry-path", exporter.DefaultMetricsPath, "`path` of the metrics endpoint")
	fs.DurationVar(&f.scrapeTimeout, "scrape.timeout", exporter.DefaultScrapeTimeout, "longest a scrape may take when the scraper sends no X-Prometheus-Scrape-Timeout-Seconds")
	fs.IntVar(&f.maxDynamic, "max-dynamic-groups", exporter.DefaultMaxDynamicGroups, "groups the cgroup-re: selectors may make; further matches are summed into group \"other\"")
	fs.StringVar(&f.logLevel, string(child.ExporterLogLevel), "info", "log `level`: debug, info, warn, error")
	exporter.CollectorFlags(fs, &f.collector)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	cfg, opts, level, err := f.options()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	extra := prometheus.NewRegistry()
	extra.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Extra = extra
	exp, err := exporter.New(cfg, opts, logger)
	if err != nil {
		return usagef("%v", err)
	}
	handler, err := exp.Mux(f.metricsPath, buildVersion())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("exporter starting", "groups", len(cfg.Groups), "collectors", strings.Join(exp.EnabledCollectors(), ","), "address", ln.Addr().String())
	fmt.Fprintln(stdout, child.ReadyLine(child.Field{Key: child.KeyListen, Value: ln.Addr().String()}))
	return serve(ctx, ln, handler, f.webConfig, logger)
}

// options validates the flags and turns them into the package's config.
func (f exporterFlags) options() (exporter.Config, exporter.Options, slog.Level, error) {
	var cfg exporter.Config
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cfg, exporter.Options{}, level, usagef("--log.level %q: want debug, info, warn or error", f.logLevel)
	}
	if f.configFile != "" {
		var err error
		if cfg, err = exporter.LoadConfig(f.configFile); err != nil {
			return cfg, exporter.Options{}, level, usagef("--config: %v", err)
		}
	}
	for _, g := range f.groups {
		grp, err := exporter.ParseGroupFlag(g)
		if err != nil {
			return cfg, exporter.Options{}, level, usagef("--group: %v", err)
		}
		cfg.Groups = append(cfg.Groups, grp)
	}
	if len(f.tempDirs) > 0 {
		cfg.TempDirs = f.tempDirs
	}
	if err := cfg.Validate(); err != nil {
		return cfg, exporter.Options{}, level, usagef("%v", err)
	}
	if f.maxDynamic < 1 {
		return cfg, exporter.Options{}, level, usagef("--max-dynamic-groups %d: want at least 1", f.maxDynamic)
	}
	if f.scrapeTimeout <= 0 {
		return cfg, exporter.Options{}, level, usagef("--scrape.timeout %v: want a positive duration", f.scrapeTimeout)
	}
	if !strings.HasPrefix(f.metricsPath, "/") {
		return cfg, exporter.Options{}, level, usagef("--web.telemetry-path %q: want a path starting with /", f.metricsPath)
	}
	if f.webConfig != "" {
		if err := web.Validate(f.webConfig); err != nil {
			return cfg, exporter.Options{}, level, usagef("--web.config.file %s: %v", f.webConfig, err)
		}
	}
	opts := f.collector
	opts.ProcFS, opts.CgroupFS, opts.ScrapeTimeout, opts.MaxDynamicGroups = f.procFS, f.cgroupFS, f.scrapeTimeout, f.maxDynamic
	return cfg, opts, level, nil
}

// serve runs the HTTP server (TLS and basic auth per the web config file)
// until ctx is done, then shuts it down gracefully.
func serve(ctx context.Context, ln net.Listener, handler http.Handler, webConfig string, logger *slog.Logger) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	addrs := []string{ln.Addr().String()}
	errc := make(chan error, 1)
	go func() {
		errc <- web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &addrs, WebConfigFile: &webConfig}, logger)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
