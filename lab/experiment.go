package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/report"
)

// Experiment is one registered experiment. Its package's init calls
// Register once; that is the whole of its registration.
type Experiment struct {
	Name    string // as `slowlab reproduce NAME` and a scenario's experiment: name it
	Summary string // one line for help
	Order   int    // place in lists and help: the published order
	// Shared are the shared flags and scenario fields it takes; any other
	// shared flag is a usage error naming the experiments that have it.
	Shared Shared
	// New returns its configuration with the published values.
	New func() Config
	// NewResult returns an empty Result of the type its Config's Run
	// returns, so that what its Print writes (the table's header, the
	// columns of its rows) can be checked without running it, as the
	// tables of README.md and docs/ are.
	NewResult func() Result
	// Files are the results files each of its sessions writes, besides
	// environment.json and the scenario, as recorder.FileName names them.
	Files []string
	// Smoke reduces cfg, a scenario of this experiment (a shipped example,
	// the published one), to a run of a few seconds that keeps its stack
	// and component settings, and says why that run needs root ("" when
	// it does not): what the end-to-end tests of every example run. It is
	// not --quick, which is the Config's Reduce (Reducer).
	Smoke func(cfg Config) (root string)
	// Report is its section of report.html (its package's Section), under
	// its Name; the registry's order is the report's.
	Report report.Section
	// External is why it cannot run on stack: external, as the clause
	// after its name ("starts its own stack (its conditions set ...)"),
	// empty when it can (it implements Targeting). ValidateAll and Plan.Run
	// refuse such a run with it, before anything asks for the external:
	// block.
	External string
}

// Config is an experiment's configuration. Its exported fields with YAML
// tags are its scenario schema (`slowlab run`, --print-scenario); Flags
// adds its own flags; Validate checks it all, naming each field by its
// YAML path; Run measures and writes the results directory.
type Config interface {
	// Head is the part every scenario has.
	Head() *Header
	// Flags adds the experiment's own flags, bound to the config.
	Flags(fs *flag.FlagSet)
	// Validate checks every field before anything starts.
	Validate() error
	// Run runs the experiment in env and returns what it measured, also
	// when it ended early (with its error).
	Run(ctx context.Context, env *Env) (Result, error)
}

// Stacked is a Config that runs on a stack: its scenario has the stack,
// limits and component settings, and the stack must run its servers.
type Stacked interface {
	Config
	Stack() *StackSpec
	Servers() []stack.Server
}

// Result is what a run of an experiment measured.
type Result interface {
	// Print writes the experiment's table.
	Print(w io.Writer)
	// AllFailed reports that nothing was measured: every run failed.
	AllFailed() bool
}

// Header is what every scenario has: the version of the scenario format
// (written by MarshalScenario, checked and cleared when a scenario is
// read: a config holds none) and which experiment.
type Header struct {
	SchemaVersion string `yaml:"schema_version,omitempty"`
	Experiment    string `yaml:"experiment"`
}

// Repeated is a Config whose conditions run Reps times (--reps, --quick).
type Repeated interface {
	Config
	Repetitions() *int
}

// MaxReps is the most repetitions of a condition a scenario's reps: or
// --reps may ask for; an experiment may allow fewer (RepsLimit).
const MaxReps = 1000

// RepsLimit is a Repeated config that allows fewer than MaxReps
// repetitions (its runs are long, or its grid large).
type RepsLimit interface {
	MaxReps() int
}

// Reducer is a Repeated config whose --quick also reduces its grid (and
// runs one repetition). Reduce need not spare what the user gave:
// Options.Apply applies the scenario's fields and the flags again over it.
type Reducer interface {
	Repeated
	Reduce()
}

// FlagChecker is a Config with flags that change the meaning of another
// (latency-gap's --delay-up replaces --delay's list): CheckFlags refuses
// the combinations given (given reports whether a flag was) that would
// otherwise silently drop or pick a value.
type FlagChecker interface {
	CheckFlags(given func(name string) bool) error
}

// Shared is a set of shared flags (and their scenario fields).
type Shared uint

// The shared flags an experiment may take.
const (
	SharedStack   Shared = 1 << iota // --stack, --no-limits; scenario stack, limits, gunicorn, nginx
	SharedReps                       // --reps, --quick
	SharedResume                     // --resume
	SharedHostCPU                    // --max-host-cpu, --max-schedule-lag
	SharedMetrics                    // --metrics-addr
	SharedTracing                    // --trace-sample-ratio and OTEL_*
	SharedTargets                    // --prometheus-targets
)

// SharedStackRun is what an experiment that runs on a stack, with
// repetitions, resumes, the host-CPU guard, served metrics and traces,
// takes; SharedAll adds --prometheus-targets, for an experiment whose
// runs serve /metrics endpoints a Prometheus can be pointed at.
const (
	SharedStackRun = SharedStack | SharedReps | SharedResume | SharedHostCPU | SharedMetrics | SharedTracing
	SharedAll      = SharedStackRun | SharedTargets
)

// flagNames are the flags of each shared set, for usage errors.
var flagNames = map[Shared][]string{
	SharedStack:   {"stack", "no-limits"},
	SharedReps:    {"reps", "quick"},
	SharedResume:  {"resume"},
	SharedHostCPU: {"max-host-cpu", "max-schedule-lag"},
	SharedMetrics: {"metrics-addr"},
	SharedTracing: {"trace-sample-ratio"},
	SharedTargets: {"prometheus-targets"},
}

// Has reports whether s includes every flag of f.
func (s Shared) Has(f Shared) bool { return s&f == f }

var experiments []Experiment

// Register adds an experiment; each experiment's package calls it from init.
func Register(e Experiment) {
	if slices.ContainsFunc(experiments, func(o Experiment) bool { return o.Name == e.Name }) {
		panic("lab: experiment registered twice: " + e.Name)
	}
	if e.New == nil || e.NewResult == nil {
		panic("lab: experiment registered without New or NewResult: " + e.Name)
	}
	if e.Smoke == nil || len(e.Files) == 0 {
		panic("lab: experiment registered without Smoke or Files: " + e.Name)
	}
	if e.Report.Name != e.Name {
		panic(fmt.Sprintf("lab: experiment %s registered with report section %q: want its own", e.Name, e.Report.Name))
	}
	if i := slices.IndexFunc(experiments, func(o Experiment) bool { return o.Order == e.Order }); i >= 0 {
		panic(fmt.Sprintf("lab: experiments %s and %s registered with the same order %d", experiments[i].Name, e.Name, e.Order))
	}
	experiments = append(experiments, e)
	slices.SortStableFunc(experiments, func(a, b Experiment) int { return a.Order - b.Order })
}

// Experiments lists the registered experiments in registration order.
func Experiments() []Experiment { return slices.Clone(experiments) }

// ReportSections lists the registered experiments' report sections, in
// the registry's order, then those RegisterSection added, in the order
// added: what report.Write draws.
func ReportSections() []report.Section {
	var sections []report.Section
	for _, e := range experiments {
		sections = append(sections, e.Report)
	}
	return append(sections, moreSections...)
}

// moreSections are the report sections of results that are no
// experiment's (RegisterSection).
var moreSections []report.Section

// RegisterSection adds a report section that is no experiment's, for the
// results of a command of its own; its package calls it from init.
// ReportSections lists it after the experiments'.
func RegisterSection(s report.Section) {
	if s.Name == "" || s.Marker == "" {
		panic(fmt.Sprintf("lab: report section registered without a name or marker: %q, %q", s.Name, s.Marker))
	}
	if slices.ContainsFunc(moreSections, func(o report.Section) bool { return o.Name == s.Name }) {
		panic("lab: report section registered twice: " + s.Name)
	}
	moreSections = append(moreSections, s)
}

// Names lists the registered experiments' names.
func Names() []string {
	var names []string
	for _, e := range experiments {
		names = append(names, e.Name)
	}
	return names
}

// Lookup returns the experiment called name.
func Lookup(name string) (Experiment, error) {
	i := slices.IndexFunc(experiments, func(e Experiment) bool { return e.Name == name })
	if i < 0 {
		return Experiment{}, fmt.Errorf("unknown experiment %q: allowed %s", name, strings.Join(Names(), ", "))
	}
	return experiments[i], nil
}

// RefuseExternal is the registered refusal of cfg's experiment to run on
// stack: external (Experiment.External), nil when it runs there or cfg
// is on another stack. ValidateAll and Plan.Run call it; an experiment's
// Run that validates its config itself calls it first.
func RefuseExternal(cfg Config) error {
	s, ok := cfg.(Stacked)
	if !ok || s.Stack().Stack != stack.NameExternal {
		return nil
	}
	if e, err := Lookup(cfg.Head().Experiment); err == nil && e.External != "" {
		return fmt.Errorf("stack external: %s %s", e.Name, e.External)
	}
	return nil
}

// Takes reports whether e takes the shared flag name; false also for a
// flag that is not shared.
func (e Experiment) Takes(flagName string) bool {
	for set, names := range flagNames {
		if e.Shared.Has(set) && slices.Contains(names, flagName) {
			return true
		}
	}
	return false
}

// IsShared reports whether flagName is a shared flag.
func IsShared(flagName string) bool {
	for _, names := range flagNames {
		if slices.Contains(names, flagName) {
			return true
		}
	}
	return false
}

// WhoHas names the experiments that take shared flag name, for the error
// of an experiment that does not: "--resume: long-poll does not take it;
// slow-client does".
func WhoHas(flagName, experiment string) string {
	var has []string
	for _, e := range experiments {
		for set, names := range flagNames {
			if e.Shared.Has(set) && slices.Contains(names, flagName) {
				has = append(has, e.Name)
			}
		}
	}
	if len(has) == 0 {
		return ""
	}
	slices.Sort(has)
	has = slices.Compact(has)
	verb := "does"
	if len(has) > 1 {
		verb = "do"
	}
	return fmt.Sprintf("--%s: %s does not take it; %s %s", flagName, experiment, strings.Join(has, ", "), verb)
}
