package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/slowlab/slowlab/lab"
)

func init() {
	register(command{name: "run", summary: "run a scenario file: any experiment with your own matrix, stack, limits and settings", run: runRun})
}

// allShared are the shared flags run accepts; the scenario's experiment
// decides which it takes.
const allShared = lab.SharedStack | lab.SharedReps | lab.SharedResume | lab.SharedHostCPU | lab.SharedMetrics | lab.SharedTracing | lab.SharedTargets

// stdin is what `slowlab run -` reads its scenario from (a test's pipe).
var stdin io.Reader = os.Stdin

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "SCENARIO.yaml|- [--stack ...] [--reps N] [--quick] [--out DIR] [--resume DIR] [--no-limits]  (see slowlab reproduce EXPERIMENT --print-scenario)\n\n"+sessionExitStatus, stdout)
	s := session{opts: lab.Options{Command: "run"}}
	s.addFlags(fs, allShared)
	if len(args) == 0 || len(args[0]) > 1 && args[0][0] == '-' {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return usagef("which scenario file? e.g. slowlab run examples/own-workers.yaml (- reads standard input)")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, scenario, err := lab.ReadScenario(args[0], stdin)
	if err != nil {
		return usagef("%v", err)
	}
	e, _ := lab.Lookup(cfg.Head().Experiment)
	var refused error
	fs.Visit(func(f *flag.Flag) {
		if lab.IsShared(f.Name) && !e.Takes(f.Name) && refused == nil {
			refused = usagef("%s", lab.WhoHas(f.Name, e.Name))
		}
	})
	if refused != nil {
		return refused
	}
	if err := s.prepare(cfg, lab.Given{Scenario: scenario}); err != nil {
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	return s.run(ctx, cfg, stdout, stderr)
}
