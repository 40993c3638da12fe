package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

func init() {
	register(command{name: "reproduce", summary: "run a published experiment end to end and write its results directory", run: runReproduce})
}

// runReproduce looks the experiment up, parses its flags (the shared ones
// it takes and its own) into its configuration and runs it.
func runReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(stdout, "Usage: slowlab reproduce EXPERIMENT [flags]   (slowlab reproduce EXPERIMENT --help for its flags)\n\nExperiments:\n")
			width := 0
			for _, e := range lab.Experiments() {
				width = max(width, len(e.Name))
			}
			for _, e := range lab.Experiments() {
				fmt.Fprintf(stdout, "  %-*s %s\n", width, e.Name, e.Summary)
			}
			return flag.ErrHelp
		}
		return usagef("which experiment? allowed: %s", strings.Join(lab.Names(), ", "))
	}
	e, err := lab.Lookup(args[0])
	if err != nil {
		return usagef("%v", err)
	}
	cfg := e.New()
	fs := newFlagSet("reproduce "+e.Name, "[flags]\n\n"+sessionExitStatus, stdout)
	s := session{opts: lab.Options{Command: "reproduce"}}
	s.addFlags(fs, e.Shared)
	printScenario := fs.Bool("print-scenario", false, "print the experiment as a scenario file for slowlab run, and exit")
	cfg.Flags(fs)
	if err := parseExperimentFlags(fs, args[1:], e.Name); err != nil {
		return err
	}
	if err := s.prepare(cfg, lab.Given{Flags: fs, Args: args[1:]}); err != nil {
		return err
	}
	if *printScenario {
		b, err := lab.MarshalScenario(cfg)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	return s.run(ctx, cfg, stdout, stderr)
}

// sessionExitStatus ends the synopsis of reproduce and run.
const sessionExitStatus = `Exit status:
  0  every condition has a valid (ok) run
  1  an error, an interruption (the runs completed are kept), or every run failed
  2  a bad command line
  4  the session completed but some conditions have no valid run (every try of each
     failed or was aborted); stderr names them and the results file that says why`

// session is the shared part of reproduce and run: the shared flags, the
// tracing flags, and starting the load generator's telemetry.
type session struct {
	opts    lab.Options
	tracing *tracingFlags
	// nameFlag, when set, renames the config's errors in prepare (assess
	// names a field by the flag that set it).
	nameFlag func(error) error
}

func (s *session) addFlags(fs *flag.FlagSet, shared lab.Shared) {
	s.opts.AddFlags(fs, shared)
	if shared.Has(lab.SharedTracing) {
		t := addTracingFlags(fs)
		s.tracing = &t
	}
}

// prepare validates the shared options, applies them to cfg (what the
// user gave explicitly winning over --quick's) and validates cfg: every
// mistake is a usage error before anything starts.
func (s *session) prepare(cfg lab.Config, given lab.Given) error {
	if err := s.opts.Validate(); err != nil {
		return usagef("%v", err)
	}
	if s.opts.Resume == "" {
		if err := checkOut(s.opts.Out); err != nil {
			return err
		}
	}
	if dir := filepath.Dir(s.opts.TargetsFile); s.opts.TargetsFile != "" && dirProblem(dir) != "" {
		return usagef("--prometheus-targets %s: no directory %s to write it in", s.opts.TargetsFile, dir)
	}
	if s.tracing != nil {
		if err := s.tracing.validate(); err != nil {
			return err
		}
	}
	if err := s.opts.Apply(cfg, given); err != nil {
		return usagef("%v", s.named(err))
	}
	if err := s.opts.ValidateFor(cfg); err != nil {
		return usagef("%v", s.named(err))
	}
	if err := lab.ValidateAll(cfg); err != nil {
		return usagef("%v", s.named(err))
	}
	return nil
}

// named is err renamed by nameFlag, if set.
func (s *session) named(err error) error {
	if s.nameFlag == nil {
		return err
	}
	return s.nameFlag(err)
}

// run refuses a --resume directory no session wrote (checkResumable),
// starts the load generator's metrics and tracing, runs the session and
// ends them.
func (s *session) run(ctx context.Context, cfg lab.Config, stdout, stderr io.Writer) error {
	if err := checkResumable(s.opts.Resume); err != nil {
		return err
	}
	metrics, stopMetrics, err := serveLoadgenMetrics(s.opts.MetricsAddr, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	s.opts.Metrics = metrics
	if s.tracing != nil {
		tp, stopTracing, err := s.tracing.start(ctx, "slowlab-loadgen", stderr)
		if err != nil {
			return err
		}
		defer stopTracing()
		s.opts.TracerProvider = tp
	}
	err = lab.RunSession(ctx, cfg, s.opts, stdout, stderr)
	switch {
	case errors.Is(err, lab.ErrUnmeasured):
		return exitError{lab.ExitUnmeasured, err}
	case errors.Is(err, stack.ErrSelectsNothing):
		// stack: external naming processes that are not running: bad
		// input, refused before anything starts.
		return usageError{err.Error()}
	}
	return err
}

// parseExperimentFlags parses args; a shared flag the experiment does not
// take is a usage error naming the experiments that do.
func parseExperimentFlags(fs *flag.FlagSet, args []string, experiment string) error {
	err := parseFlags(fs, args)
	const notDefined = "flag provided but not defined: -"
	if err == nil || !strings.HasPrefix(err.Error(), notDefined) {
		return err
	}
	name := strings.TrimPrefix(strings.TrimSuffix(err.Error(), " (see --help)"), notDefined)
	if who := lab.WhoHas(strings.TrimPrefix(name, "-"), experiment); who != "" {
		return usagef("%s", who)
	}
	return err
}

// checkResumable refuses, before the session writes anything, a --resume
// directory no session wrote: missing, a file, or without its
// scenario.yaml (a typo would otherwise be made, or written into).
func checkResumable(dir string) error {
	if dir == "" {
		return nil
	}
	if p := dirProblem(dir); p != "" {
		return usagef("--resume %s: %s: give the results directory of an earlier session", dir, p)
	}
	if _, err := os.Stat(filepath.Join(dir, lab.ScenarioFile)); errors.Is(err, fs.ErrNotExist) {
		return usagef("--resume %s: it has no %s, so what it was run with is unknown: start a new results directory", dir, lab.ScenarioFile)
	}
	return nil
}

// checkOut refuses, before anything starts, an --out a command cannot
// write its results in: a path that is not a directory, or a directory
// that holds another session's results (a results file: scenario.yaml,
// manifest.json, environment.json or a .csv; results files are made
// anew, never written over). "" (a new directory chosen), a missing
// directory and one holding only other files pass: buffer-sweep writes
// each namespace's scenario and output log into the directory its
// session there then fills.
func checkOut(dir string) error {
	if dir == "" {
		return nil
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usagef("--out %s: %v", dir, err)
	case !info.IsDir():
		return usagef("--out %s: not a directory: give a new results directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return usagef("--out %s: %v", dir, err)
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case n == lab.ScenarioFile, n == recorder.ManifestFile, n == recorder.EnvironmentFile, strings.HasSuffix(n, ".csv"):
			return usagef("--out %s: the directory holds another session's results (%s): give a new results directory", dir, n)
		}
	}
	return nil
}

// dirProblem is why path cannot be written in as a directory: "no such
// directory", "not a directory" or stat's error; "" when it can.
func dirProblem(path string) string {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such directory"
	case err != nil:
		return err.Error()
	case !info.IsDir():
		return "not a directory"
	}
	return ""
}
