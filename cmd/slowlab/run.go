package main

import (
	"context"
	"io"

	"github.com/slowlab/slowlab/lab"
)

func init() {
	register(command{name: "run", summary: "run a scenario file: your own slow-client matrix, stack, limits and settings", run: runRun})
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "SCENARIO.yaml [--stack ...] [--out DIR] [--resume DIR] [--no-limits]  (see slowlab reproduce slow-client --print-scenario)", stdout)
	var lf labFlags
	lf.register(fs)
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return usagef("which scenario file? e.g. slowlab run examples/own-workers.yaml")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if err := lf.validate(); err != nil {
		return err
	}
	sc, err := lab.LoadScenario(args[0])
	if err != nil {
		return usagef("%v", err)
	}
	return runScenario(ctx, sc, lf, stdout, stderr)
}
