package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/assess"
	"github.com/slowlab/slowlab/lab/stack"
)

func init() {
	register(command{name: "assess", summary: "how many slow clients of each kind take a stack down, what held it, and what fixes it", run: runAssess})
}

// runAssess runs `slowlab assess`: on a managed stack (--stack, --server,
// --route) or the user's (--fast-url and the other external flags). It
// exits 1 when --fail-on finds a threshold below its bound, 2 for a usage
// error, and 1 when the assessment was refused before any load.
func runAssess(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := assess.Default()
	fs := newFlagSet("assess", "[flags]", stdout)
	var s session
	s.addFlags(fs, lab.SharedStack|lab.SharedMetrics)
	cfg.Flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.ApplyExternal(); err != nil {
		return usagef("%v", err)
	}
	switch {
	case cfg.External != nil && s.opts.Stack != "" && s.opts.Stack != stack.NameExternal:
		return usagef("--fast-url describes an external stack; --stack %s is a managed one: give one of them", s.opts.Stack)
	case cfg.External == nil && s.opts.Stack == stack.NameExternal:
		return usagef("--stack external: give the stack's URLs (--fast-url, and --large-url, --upload-url, --stream-url for the probes that need them) and its processes (--app, --proxy)")
	}
	if err := s.prepare(cfg, lab.Given{Flags: fs, Args: args}); err != nil {
		return err
	}
	metrics, stopMetrics, err := serveLoadgenMetrics(s.opts.MetricsAddr, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	s.opts.Metrics = metrics
	env, err := s.opts.Env(cfg, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "assess: results in %s\n", env.Out)
	res, err := cfg.Run(ctx, env)
	if r, ok := res.(*assess.Result); ok && r != nil {
		fmt.Fprintf(stdout, "results: %s\n\n", env.Out)
		r.Print(stdout)
		lab.WriteReport(env.Out, stdout, stderr)
		if failed := r.Failed(); err == nil && len(failed) > 0 {
			return exitError{1, fmt.Errorf("--fail-on: %d bound(s) broken", len(failed))}
		}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; the probes completed so far are in %s", env.Out)
	}
	return err
}
