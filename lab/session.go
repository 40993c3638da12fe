package lab

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/cliflag"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Options are a session's shared settings: the shared flags of `slowlab
// reproduce` and `slowlab run`, and the instruments cmd started.
type Options struct {
	Stack       string // overrides the scenario's stack when set
	NoLimits    bool
	AllowRemote bool // the external stack's URLs may leave loopback
	Out         string
	Resume      string // results directory to resume
	MaxHostCPU  float64
	MaxLag      time.Duration // --max-schedule-lag
	TargetsFile string
	MetricsAddr string        // served by cmd; here only to be refused where not taken
	Reps        cliflag.Count // overrides the scenario's reps when set
	Quick       bool          // one repetition per condition
	Command     string        // the slowlab command of the session, for manifest.json

	Metrics        *loadgen.Metrics
	TracerProvider trace.TracerProvider
}

// DefaultMaxHostCPU is --max-host-cpu's default, in percent.
const DefaultMaxHostCPU = 90

// AddFlags adds the shared flags an experiment takes to fs (all of them
// for `slowlab run`, which learns the experiment from the file).
func (o *Options) AddFlags(fs *flag.FlagSet, shared Shared) {
	fs.StringVar(&o.Out, "out", "", "results directory (default results/<experiment>-<UTC timestamp>)")
	if shared.Has(SharedStack) {
		fs.StringVar(&o.Stack, "stack", "", "system under test: auto (real when installed, else embedded), embedded (nothing to install), real (Gunicorn + NGINX; alias gunicorn-nginx), external (an app the user runs, described in the scenario's external: block), or APP+PROXY such as embedded+nginx (APP+PROXY+PROXY...: each route behind the proxy that runs it) (default: the scenario's, auto)")
		fs.BoolVar(&o.NoLimits, "no-limits", false, "run without cgroups (needed where cgroups cannot be written)")
		fs.BoolVar(&o.AllowRemote, "allow-remote", false, "let the external stack's URLs name a host that is not loopback (only with stack: external)")
	}
	if shared.Has(SharedReps) {
		fs.Var(&o.Reps, "reps", fmt.Sprintf("repetitions of each condition, 1 to %d (default: the experiment's)", MaxReps))
		fs.BoolVar(&o.Quick, "quick", false, "one repetition per condition (as --reps 1; --reps, given, wins), and the experiment's reduced grid where it has one (see its help); a value you give, as a flag or a field of the scenario file, always wins over the reduced one")
	}
	if shared.Has(SharedResume) {
		fs.StringVar(&o.Resume, "resume", "", "keep the completed runs of this results directory and run only the missing ones; refused if it was run with other settings")
	}
	if shared.Has(SharedHostCPU) {
		fs.Float64Var(&o.MaxHostCPU, "max-host-cpu", DefaultMaxHostCPU, "abort and retry a run while the host CPU used outside this session (everything but this process and the processes it started: the experiment's own load never counts) stays above this percentage of all CPUs for 2 s (0 disables)")
		fs.DurationVar(&o.MaxLag, "max-schedule-lag", 0, "abort and retry, as --max-host-cpu does, a run whose load generator started a /fast request more than this behind its schedule (slow-client and buffer-sweep runs): its latencies would include the generator's stall (e.g. 1s; 0 disables)")
	}
	if shared.Has(SharedMetrics) {
		fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve the load generator's /metrics here during the run, e.g. 127.0.0.1:9101 (off when empty)")
	}
	if shared.Has(SharedTargets) {
		fs.StringVar(&o.TargetsFile, "prometheus-targets", "", "write each run's /metrics endpoints to this Prometheus file_sd `file` (jobs slowlab-exporter, slowlab-target, slowlab-proxy; label run_id)")
	}
}

// Validate checks the shared settings.
func (o Options) Validate() error {
	switch {
	case o.MaxLag < 0:
		return fmt.Errorf("--max-schedule-lag %s: want 0 (off) or more", o.MaxLag)
	case o.MaxHostCPU < 0 || o.MaxHostCPU > 100:
		return fmt.Errorf("--max-host-cpu %v: allowed 0 (off) to 100 percent", o.MaxHostCPU)
	case o.Resume != "" && o.Out != "" && o.Resume != o.Out:
		return fmt.Errorf("--resume %q with --out %q: give one directory", o.Resume, o.Out)
	case o.Reps.Given && (o.Reps.N < 1 || o.Reps.N > MaxReps):
		return fmt.Errorf("--reps %d: allowed 1 to %d", o.Reps.N, MaxReps)
	case o.Stack != "":
		if err := stack.ValidName(o.Stack); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	return nil
}

// ValidateFor checks the options that depend on cfg's stack, once they
// are applied to it: --allow-remote is for the external stack only.
func (o Options) ValidateFor(cfg Config) error {
	if !o.AllowRemote {
		return nil
	}
	s, ok := cfg.(Stacked)
	if !ok {
		return errors.New("--allow-remote: only for stack: external")
	}
	if name := s.Stack().Stack; name != stack.NameExternal {
		return fmt.Errorf("--allow-remote: only for stack: external (the %s stack serves on loopback)", name)
	}
	return nil
}

// Apply puts the options that override scenario fields into cfg: reps
// and the stack name. --quick is one repetition (--reps, when given,
// wins) and the experiment's reduced grid; what the user gave explicitly
// (given: the scenario file's fields, then the experiment's own flags) is
// applied again over the reduction, so that a value the user gave always
// wins over --quick's. This is the one place --quick is applied.
func (o Options) Apply(cfg Config, given Given) error {
	if err := given.check(cfg); err != nil {
		return err
	}
	if r, ok := cfg.(Repeated); ok {
		if rd, ok := cfg.(Reducer); ok && o.Quick {
			rd.Reduce()
			if err := given.reapply(cfg); err != nil {
				return err
			}
		}
		switch {
		case o.Reps.Given:
			*r.Repetitions() = o.Reps.N
		case o.Quick:
			*r.Repetitions() = 1
		}
	}
	if s, ok := cfg.(Stacked); ok && o.Stack != "" {
		s.Stack().Stack = o.Stack
	}
	return nil
}

// ResultsDir is where a session writes: out if given, else
// results/<experiment>-<UTC timestamp>.
func ResultsDir(out, experiment string) string {
	if out != "" {
		return out
	}
	return filepath.Join("results", experiment+"-"+time.Now().UTC().Format("20060102T150405Z"))
}

// ErrAllFailed is returned when every run of a session failed.
var ErrAllFailed = errors.New("every run failed")

// RunSession runs cfg (validated, with the options applied) as `slowlab
// reproduce` and `slowlab run` do: it resolves the stack, says where the
// results go, runs, writes manifest.json (WriteManifest), prints the
// table and writes the report. Progress goes
// to stderr. A session that completed with every run failed returns
// ErrAllFailed; one that left some conditions without a valid run, an
// error wrapping ErrUnmeasured that names them.
func RunSession(ctx context.Context, cfg Config, o Options, stdout, stderr io.Writer) error {
	env, err := o.Env(cfg, stderr)
	if err != nil {
		return err
	}
	// Once, before the first run, not at each run's start (which assess's
	// probes share, with their own check): a stack that does not answer
	// fails the session before any result is written; one that stops
	// later fails the run at whose end it refuses (Running.Failed).
	if ext := env.Stack.External; ext != nil {
		var kinds []stack.Target
		if t, ok := cfg.(Targeting); ok {
			kinds = t.Targets()
		}
		if err := ext.Reach(ctx, kinds); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "%s: results in %s\n", cfg.Head().Experiment, env.Out)
	res, err := cfg.Run(ctx, env)
	manifestErr := WriteManifest(env.Out, o.Command, cfg.Head().Experiment)
	if res != nil {
		fmt.Fprintf(stdout, "results: %s\n\n", env.Out)
		PrintResult(stdout, res)
		WriteReport(env.Out, stdout, stderr)
	}
	switch {
	case errors.Is(err, context.Canceled):
		err = fmt.Errorf("interrupted; runs completed so far are in %s", env.Out)
	case err == nil && res != nil && res.AllFailed():
		err = fmt.Errorf("%w; the reasons are in %s", ErrAllFailed, filepath.Join(env.Out, reasonsFile(res)))
	case err == nil:
		err = env.Unmeasured()
	}
	return errors.Join(err, manifestErr)
}

// Reasoned is a Result whose failures are explained in a results file
// other than runs.csv (long-poll's probes.csv, latency-gap's
// gap-requests.csv: their error column).
type Reasoned interface {
	ReasonsFile() string
}

// reasonsFile is the results file that says why res's runs failed.
func reasonsFile(res Result) string {
	if r, ok := res.(Reasoned); ok {
		return r.ReasonsFile()
	}
	return "runs.csv"
}

// WriteManifest writes dir's manifest.json as a session of experiment
// that command ran ends: what wrote the directory and the results files
// it holds (recorder.WriteManifest). Nothing when the session made no
// directory.
func WriteManifest(dir, command, experiment string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return recorder.WriteManifest(dir, cmp.Or(command, "run"), experiment)
}

// WriteReport draws the results directory's report; a failure is
// reported, not fatal, since the measurements are already on disk.
func WriteReport(dir string, stdout, stderr io.Writer) {
	rep, err := report.Write(dir, ReportSections())
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "\nreport: %s (%s)\n", rep.HTML, report.Count(len(rep.Figures), "figure"))
}

// Env resolves the session's environment for cfg: the results directory,
// the stack (saying which auto chose and why) with its cgroups and limits,
// and the canonical scenario.
func (o Options) Env(cfg Config, stderr io.Writer) (*Env, error) {
	env := &Env{Out: ResultsDir(o.Out, cfg.Head().Experiment), Progress: stderr, Metrics: o.Metrics,
		TracerProvider: o.TracerProvider, MaxHostCPU: o.MaxHostCPU, MaxScheduleLag: o.MaxLag, TargetsFile: o.TargetsFile,
		unmeasured: &unmeasured{}}
	if o.Resume != "" {
		env.Out, env.Resume = o.Resume, true
	}
	if s, ok := cfg.(Stacked); ok {
		st, err := o.stack(s, stderr)
		if err != nil {
			return nil, err
		}
		env.Stack = st
	}
	b, err := MarshalScenario(cfg)
	if err != nil {
		return nil, err
	}
	env.Scenario = b
	return env, nil
}

// stack resolves the stack of cfg. A stack with a real component runs
// every component under the scenario's limits (the published ones by
// default), which needs cgroups; the embedded stack runs in cgroups only
// to account CPU and memory, where cgroups can be written. --no-limits
// runs without cgroups. The scenario is updated to say what ran.
func (o Options) stack(cfg Stacked, stderr io.Writer) (stack.Stack, error) {
	spec := cfg.Stack()
	if spec.Stack == stack.NameExternal {
		return o.external(cfg, stderr)
	}
	if err := o.ValidateFor(cfg); err != nil {
		return stack.Stack{}, err
	}
	st, note, err := stack.Lookup(spec.Stack, cfg.Servers()...)
	if err != nil {
		return st, err
	}
	if note != "" {
		fmt.Fprintln(stderr, note)
	}
	spec.Stack = st.Name
	st.Settings = spec.Settings()
	usable := stack.CgroupsUsable(cgroup.DefaultRoot)
	switch {
	case o.NoLimits:
		spec.Limits = map[string]LimitSpec{}
	case st.Real():
		if !usable {
			return st, fmt.Errorf("the %s stack runs under cgroup limits: %w", st.Name, cgroup.ErrUnavailable)
		}
		st.Cgroups, st.Limits = true, spec.CgroupLimits()
	default:
		st.Cgroups = usable // accounted, not limited
		spec.Limits = map[string]LimitSpec{}
	}
	if r, ok := cfg.(Routed); ok {
		if st, err = st.WithOwners(r.Routes()...); err != nil {
			return st, err
		}
		for _, route := range r.Routes() {
			if err := st.CheckRoute(route); err != nil {
				return st, err
			}
		}
	}
	return st, st.Check(cfg.Servers()...)
}

// Targeting is a Stacked config that says which kinds of request it
// sends, so that an external stack can check it has their URLs.
type Targeting interface {
	Targets() []stack.Target
}

// Routed is a Stacked config whose conditions name routes, which an
// external deployment (one route) must match.
type Routed interface {
	Routes() []stack.Route
}

// TakesHTTP2 is a configuration that can measure an external stack
// whose front speaks HTTP/2 (external.http2).
type TakesHTTP2 interface {
	TakesHTTP2() bool
}

// TakesUnseen is a configuration that can measure an external stack
// whose processes are not on this machine (external.unseen).
type TakesUnseen interface {
	TakesUnseen() bool
}

// external resolves stack: external before anything starts: the
// deployment's URLs (loopback unless --allow-remote), one URL for every
// kind of request the experiment sends, conditions of its route and
// server only, and every selector selecting something now. It starts
// nothing and applies no limits; it says which limits it found.
func (o Options) external(cfg Stacked, stderr io.Writer) (stack.Stack, error) {
	spec := cfg.Stack()
	exp := cfg.Head().Experiment
	if spec.External == nil {
		return stack.Stack{}, errors.New("stack external: no external: block in the scenario; give the deployment's URLs (fast_url, large_url, longpoll_url), route, server and groups")
	}
	ext, err := spec.External.Deployment(o.AllowRemote)
	if err != nil {
		return stack.Stack{}, err
	}
	if u, ok := cfg.(TakesUnseen); ext.Unseen && !(ok && u.TakesUnseen()) {
		return stack.Stack{}, fmt.Errorf("external.unseen: %s measures the stack's processes; give their groups (only slowlab assess measures a stack it cannot see)", exp)
	}
	if u, ok := cfg.(TakesHTTP2); ext.HTTP2 && !(ok && u.TakesHTTP2()) {
		return stack.Stack{}, fmt.Errorf("external.http2: %s speaks HTTP/1.1 to the stack (only slowlab assess has HTTP/2 probes)", exp)
	}
	st := stack.Stack{Name: stack.NameExternal, External: &ext}
	if err := st.Check(cfg.Servers()...); err != nil {
		return st, err
	}
	if t, ok := cfg.(Targeting); ok {
		for _, k := range t.Targets() {
			if ext.URLs[k] == "" {
				return st, fmt.Errorf("external.%s_url: %s sends these requests; give their URL", k, exp)
			}
		}
	}
	if r, ok := cfg.(Routed); ok {
		if st, err = st.WithOwners(r.Routes()...); err != nil {
			return st, err
		}
		for _, route := range r.Routes() {
			if route != ext.Route {
				return st, fmt.Errorf("a condition's route %s: the external deployment is %s (external.route)", route, ext.Route)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found, err := ext.Find(ctx)
	if err != nil {
		return st, err
	}
	spec.Limits = map[string]LimitSpec{}
	fmt.Fprintf(stderr, "--stack external: %s %s at %s, nothing started, no limits applied; %s\n", ext.Route, ext.Server.Name(),
		strings.Join(externalURLs(ext), ", "), found)
	return st, nil
}

func externalURLs(ext stack.External) []string {
	var out []string
	for _, t := range stack.Targets {
		if u, ok := ext.URLs[t]; ok {
			out = append(out, u)
		}
	}
	return out
}
