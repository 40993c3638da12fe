package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/target/proxy"
)

func init() {
	register(command{name: "reproduce", summary: "run a published experiment end to end and write its results directory", run: runReproduce})
}

var experiments = []string{"slow-client", "long-poll", "latency-gap"}

var stacks = []string{"auto", "embedded", "gunicorn-nginx"}

// labFlags are the flags shared by reproduce and run.
type labFlags struct {
	stack, out, metricsAddr string
	resume, targetsFile     string
	maxHostCPU              float64
	noLimits                bool
	tracing                 tracingFlags
}

func (f *labFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.stack, "stack", "", "system under test: auto (gunicorn-nginx when both are on PATH, else embedded), embedded (nothing to install), gunicorn-nginx (default auto, or the scenario's)")
	fs.StringVar(&f.out, "out", "", "results directory (default results/<experiment>-<UTC timestamp>)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the load generator's /metrics here during the run, e.g. 127.0.0.1:9101 (off when empty)")
	fs.StringVar(&f.resume, "resume", "", "keep the completed runs of this results directory and run only the missing ones (slow-client)")
	fs.Float64Var(&f.maxHostCPU, "max-host-cpu", lab.DefaultMaxHostCPU, "abort and retry a run while host CPU stays above this percentage for 2 s (0 disables)")
	fs.StringVar(&f.targetsFile, "prometheus-targets", "", "write each run's /metrics endpoints to this Prometheus file_sd `file` (jobs slowlab-exporter, slowlab-target, slowlab-proxy; label run_id)")
	f.tracing = addTracingFlags(fs)
	fs.BoolVar(&f.noLimits, "no-limits", false, "run the gunicorn-nginx stack without cgroup limits (needed where cgroups cannot be written)")
}

// telemetry starts what the lab's load generator reports through: its
// metrics (served on --metrics-addr when set) and, when OTEL_* asks for it,
// its tracer provider. stop flushes and ends both.
func (f *labFlags) telemetry(ctx context.Context, stderr io.Writer) (*loadgen.Metrics, trace.TracerProvider, func(), error) {
	metrics, stopMetrics, err := serveLoadgenMetrics(f.metricsAddr, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	tp, stopTracing, err := f.tracing.start(ctx, "slowlab-loadgen", stderr)
	if err != nil {
		stopMetrics()
		return nil, nil, nil, err
	}
	return metrics, tp, func() { stopTracing(); stopMetrics() }, nil
}

func (f *labFlags) validate() error {
	if f.stack != "" && !oneOf(f.stack, stacks) {
		return usagef("--stack %q: allowed %s", f.stack, strings.Join(stacks, ", "))
	}
	if f.maxHostCPU < 0 || f.maxHostCPU > 100 {
		return usagef("--max-host-cpu %v: allowed 0 (off) to 100 percent", f.maxHostCPU)
	}
	if f.resume != "" && f.out != "" && f.resume != f.out {
		return usagef("--resume %q with --out %q: give one directory", f.resume, f.out)
	}
	return f.tracing.validate()
}

func runReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce", "slow-client|long-poll|latency-gap [--stack auto|embedded|gunicorn-nginx] [--reps N] [--out DIR] [--quick]", stdout)
	var lf labFlags
	lf.register(fs)
	reps := fs.Int("reps", 3, "repetitions of each condition (long-poll: 1 unless given)")
	quick := fs.Bool("quick", false, "one repetition per condition (same as --reps 1)")
	printScenario := fs.Bool("print-scenario", false, "print the experiment as a scenario file for slowlab run, and exit")
	seconds := fs.Float64("seconds", 60, "long-poll: probing window in seconds")
	wait := fs.Duration("wait", 30*time.Second, "long-poll: how long each held request waits before its 204")
	keepAlive := fs.Bool("keepalive", false, "long-poll: holders and probes reuse their connections (default: a new connection per request)")
	var conds conditionsFlag
	fs.Var(&conds, "condition", "long-poll: SERVER:HOLD:PROBES, e.g. gthread-2x16:31:8; repeat for more (default: the published six)")
	acceptWhenFree := fs.Bool("accept-when-free", false, "long-poll, embedded stack: gthread workers accept only while a thread is free (Gunicorn accepts regardless)")
	runs := fs.Int("runs", 40, "latency-gap: requests per mode (keep-alive, new connection) and condition; medians over them")
	delays := fs.String("delay", "0,25ms", "latency-gap: added one-way delays, comma-separated (each applies in both directions)")
	sizes := fs.String("sizes", "1k,100k", "latency-gap: response sizes, comma-separated (bytes; k, m suffixes)")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return usagef("which experiment? allowed: %s", strings.Join(experiments, ", "))
	}
	experiment := args[0]
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if !oneOf(experiment, experiments) {
		return usagef("unknown experiment %q: allowed %s", experiment, strings.Join(experiments, ", "))
	}
	if err := lf.validate(); err != nil {
		return err
	}
	if *reps < 1 || *reps > 1000 {
		return usagef("--reps %d: allowed 1 to 1000", *reps)
	}
	if *quick {
		*reps = 1
	}
	if !(*seconds > 0) || *seconds > 86400 {
		return usagef("--seconds %v: allowed more than 0 up to 86400", *seconds)
	}
	if *wait <= 0 || *wait > 10*time.Minute {
		return usagef("--wait %s: allowed more than 0 up to 10m", *wait)
	}
	if experiment != "long-poll" && (len(conds) > 0 || *acceptWhenFree) {
		return usagef("--condition and --accept-when-free: long-poll only")
	}
	if experiment == "latency-gap" {
		return runLatencyGap(ctx, lf, *runs, *delays, *sizes, stdout, stderr)
	}
	if experiment == "slow-client" {
		sc := lab.DefaultScenario()
		sc.Reps = *reps
		if lf.stack != "" {
			sc.Stack = lf.stack
		}
		if *printScenario {
			b, err := sc.Marshal()
			if err != nil {
				return err
			}
			_, err = stdout.Write(b)
			return err
		}
		return runScenario(ctx, sc, lf, stdout, stderr)
	}
	if *printScenario {
		return usagef("--print-scenario: only slow-client is a scenario so far")
	}
	if *acceptWhenFree && lf.stack != "embedded" {
		return usagef("--accept-when-free: only the embedded stack has it (use --stack embedded); Gunicorn always accepts")
	}
	if lf.stack == "" {
		lf.stack = "auto"
	}
	st, err := chooseStack(lf.stack, lab.Scenario{}, true, stderr)
	if err != nil {
		return err
	}
	out := resultsDir(lf.out, experiment)
	metrics, tp, stopTelemetry, err := lf.telemetry(ctx, stderr)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	e := lab.DefaultLongPoll()
	e.Seconds = time.Duration(*seconds * float64(time.Second))
	e.Wait = *wait
	e.KeepAlive = *keepAlive
	// --reps defaults to 3 for slow-client; long-poll runs each condition
	// once unless asked (--quick is once anyway).
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "reps" {
			e.Reps = *reps
		}
	})
	if len(conds) > 0 {
		e.Conditions = conds
	}
	if em, ok := st.(lab.Embedded); ok {
		em.AcceptWhenFree = *acceptWhenFree
		st = em
	}
	fmt.Fprintf(stderr, "long-poll on the %s stack: %d conditions of %s each, results in %s\n", st.Name(), len(e.Conditions), e.Lead+e.Seconds, out)
	res, err := lab.RunLongPoll(ctx, e, lab.Options{Out: out, Stack: st, Progress: stderr, Metrics: metrics, TracerProvider: tp})
	if res != nil {
		fmt.Fprintf(stdout, "results: %s\n\n", res.Dir)
		lab.PrintLongPoll(stdout, res.Groups)
		writeReport(res.Dir, stdout, stderr)
	}
	return interrupted(err, out)
}

// runLatencyGap runs the latency-gap experiment in network namespaces the
// run creates (root needed).
func runLatencyGap(ctx context.Context, lf labFlags, runs int, delays, sizes string, stdout, stderr io.Writer) error {
	e := lab.DefaultLatencyGap()
	e.Runs = runs
	e.Delays, e.Sizes = nil, nil
	for _, d := range strings.Split(delays, ",") {
		v, err := time.ParseDuration(strings.TrimSpace(d))
		if strings.TrimSpace(d) == "0" {
			v, err = 0, nil
		}
		if err != nil || v < 0 || v > 5*time.Second {
			return usagef("--delay %q: want durations from 0 to 5s, comma-separated, e.g. 0,25ms", delays)
		}
		e.Delays = append(e.Delays, v)
	}
	for _, sz := range strings.Split(sizes, ",") {
		v, err := proxy.ParseSize(strings.TrimSpace(sz))
		if err != nil || v < 1 || v > 64<<20 {
			return usagef("--sizes %q: want sizes from 1 byte to 64m, comma-separated, e.g. 1k,100k", sizes)
		}
		e.Sizes = append(e.Sizes, int(v))
	}
	if err := e.Validate(); err != nil {
		return usagef("%v", err)
	}
	out := resultsDir(lf.out, "latency-gap")
	fmt.Fprintf(stderr, "latency-gap: %d delays x %d sizes x %d runs, results in %s\n", len(e.Delays), len(e.Sizes), e.Runs, out)
	res, err := lab.RunLatencyGap(ctx, e, lab.Options{Out: out, Stack: lab.Embedded{}, Progress: stderr})
	if res != nil {
		fmt.Fprintf(stdout, "results: %s\n\n", out)
		lab.PrintLatencyGap(stdout, res.Rows)
		if !res.Valid() {
			fmt.Fprintln(stdout, "\nwarning: the delay line ran more than 1 ms late (p99) in some condition; those rows are marked invalid")
		}
		writeReport(out, stdout, stderr)
	}
	return interrupted(err, out)
}

func resultsDir(out, experiment string) string {
	if out != "" {
		return out
	}
	return filepath.Join("results", experiment+"-"+time.Now().UTC().Format("20060102T150405Z"))
}

// runScenario runs a slow-client scenario and prints the conditions table.
func runScenario(ctx context.Context, sc lab.Scenario, lf labFlags, stdout, stderr io.Writer) error {
	if lf.stack != "" {
		sc.Stack = lf.stack
	}
	st, err := chooseStack(sc.Stack, sc, lf.noLimits, stderr)
	if err != nil {
		return err
	}
	out, resume := resultsDir(lf.out, "slow-client"), false
	if lf.resume != "" {
		out, resume = lf.resume, true
	}
	metrics, tp, stopTelemetry, err := lf.telemetry(ctx, stderr)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	e := sc.SlowClient()
	o := lab.Options{Out: out, Stack: st, Progress: stderr, Metrics: metrics, TracerProvider: tp,
		MaxHostCPU: lf.maxHostCPU, Resume: resume, TargetsFile: lf.targetsFile}
	switch st := st.(type) {
	case lab.GunicornNginx:
		if l, ok := st.Limits["loadgen"]; ok {
			o.LoadgenLimits = &l
		}
	case lab.Embedded:
		if st.Cgroups {
			o.LoadgenLimits = &lab.Limits{} // accounted, not limited
		}
	}
	fmt.Fprintf(stderr, "slow-client on the %s stack: %d runs, results in %s\n", st.Name(), len(e.Runs()), out)
	res, err := lab.RunSlowClient(ctx, e, o)
	if res != nil {
		fmt.Fprintf(stderr, "resource sampling jitter: %s\n", res.SamplingJitter)
		fmt.Fprintf(stdout, "results: %s\n\n", res.Dir)
		lab.PrintConditions(stdout, res.Conditions)
		writeReport(res.Dir, stdout, stderr)
	}
	return interrupted(err, out)
}

// writeReport draws the results directory's report; a failure is reported,
// not fatal, since the measurements are already on disk.
func writeReport(dir string, stdout, stderr io.Writer) {
	rep, err := report.Write(dir)
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "\nreport: %s (%d figures)\n", rep.HTML, len(rep.Figures))
}

// interrupted words a cancelled experiment's error.
func interrupted(err error, out string) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; runs completed so far are in %s", out)
	}
	return err
}

// chooseStack resolves a stack name and says which stack auto picked and
// why. The gunicorn-nginx stack gets the scenario's limits unless noLimits.
func chooseStack(name string, sc lab.Scenario, noLimits bool, stderr io.Writer) (lab.Stack, error) {
	real := func() (lab.Stack, error) {
		g := lab.GunicornNginx{ExtraGunicornArgs: sc.Gunicorn.ExtraArgs, NginxSnippet: sc.Nginx.Snippet}
		if !noLimits {
			g.Limits = sc.CgroupLimits()
			if len(g.Limits) == 0 {
				g.Limits = lab.DefaultLimits()
			}
		}
		return g, nil
	}
	embedded := func() (lab.Stack, error) {
		return lab.Embedded{Cgroups: accountingCgroups(noLimits)}, nil
	}
	switch name {
	case "embedded":
		return embedded()
	case "gunicorn-nginx":
		if err := lab.GunicornNginxAvailable(); err != nil {
			return nil, fmt.Errorf("--stack gunicorn-nginx: %v", err)
		}
		return real()
	}
	if err := lab.GunicornNginxAvailable(); err != nil {
		fmt.Fprintf(stderr, "--stack auto: using embedded (%v)\n", err)
		return embedded()
	}
	fmt.Fprintln(stderr, "--stack auto: using gunicorn-nginx (both on PATH)")
	return real()
}

// accountingCgroups tells whether the embedded stack can put its components
// in cgroups (without limits) to account their CPU and memory: as root, on
// a machine with a cgroup hierarchy, unless --no-limits.
func accountingCgroups(noLimits bool) bool {
	if noLimits || os.Geteuid() != 0 {
		return false
	}
	_, err := lab.DetectCgroups(lab.DefaultCgroupRoot)
	return err == nil
}

func oneOf(s string, allowed []string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

// conditionsFlag collects --condition SERVER:HOLD:PROBES values.
type conditionsFlag []lab.LongPollCondition

func (c *conditionsFlag) String() string { return "" }

func (c *conditionsFlag) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return fmt.Errorf("%q: want SERVER:HOLD:PROBES, e.g. gthread-2x16:20:8", v)
	}
	srv, err := lab.ParseServer(parts[0])
	if err != nil || srv.Model == "async" {
		return fmt.Errorf("%q: server %q: want sync-W or gthread-WxT", v, parts[0])
	}
	hold, err := strconv.Atoi(parts[1])
	if err != nil || hold < 0 || hold > 10000 {
		return fmt.Errorf("%q: hold %q: want 0 to 10000", v, parts[1])
	}
	probes, err := strconv.Atoi(parts[2])
	if err != nil || probes < 1 || probes > 10000 {
		return fmt.Errorf("%q: probes %q: want 1 to 10000", v, parts[2])
	}
	*c = append(*c, lab.LongPollCondition{Server: srv, Hold: hold, Probes: probes})
	return nil
}
