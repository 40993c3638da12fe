package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/assess"
	"github.com/slowlab/slowlab/lab/stack"
)

func init() {
	register(command{name: "assess", summary: "how many slow clients of each kind take a stack down, what held it, and what fixes it", run: runAssess})
}

// The exit codes of `slowlab assess`, for a CI gate that must tell a weak
// stack from a broken assessment.
const (
	assessPassed   = 0 // every --fail-on bound held (or none given)
	assessBroken   = 1 // a --fail-on bound is broken: the stack is too weak
	assessBadInput = 2 // bad flags, or a URL that does not serve what its probe needs
	assessUnmade   = 3 // the assessment could not be made: stack down, instrument invalid at every try, a bound not judged
)

// runAssess runs `slowlab assess`: on a managed stack (--stack, --server,
// --route) or the user's (--fast-url and the other external flags), and
// exits with one of the codes above. --combine, wherever it is among the
// flags, makes it `slowlab assess --combine`.
func runAssess(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if i := slices.IndexFunc(args, func(a string) bool { return a == "--combine" || a == "-combine" }); i >= 0 {
		return runAssessCombine(ctx, slices.Delete(slices.Clone(args), i, i+1), stdout, stderr)
	}
	cfg := assess.Default()
	fs := newFlagSet("assess", "[flags]", stdout)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintf(stdout, "\n--max-schedule-lag, for assess: a level (or baseline) whose /fast started more than this behind its schedule is invalid and run again; 0, the default, is assess's %s, not off.\n", assess.DefaultMaxLag)
		fmt.Fprintln(stdout, "\nslowlab assess --combine --out DIR SHARD_DIR... judges a sharded assessment's shards together (slowlab assess --combine --help).")
		fmt.Fprintln(stdout, "\nExit status: 0 passed; 1 a --fail-on bound broken (the stack is too weak); 2 bad input (flags, or a URL that does not serve what its probe needs); 3 the assessment could not be made (the stack down, the load generator invalid at every try, a bound not judged)")
	}
	var s session
	s.addFlags(fs, lab.SharedStack|lab.SharedMetrics|lab.SharedHostCPU)
	cfg.Flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	s.nameFlag = func(err error) error { return assess.NameFlag(err, func(name string) bool { return given[name] }) }
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
	if err := parsedOnly(ctx); err != nil {
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
		// The stack as given: its URLs, its processes' selectors.
		return exitError{assessBadInput, s.named(err)}
	}
	fmt.Fprintf(stderr, "assess: results in %s\n", env.Out)
	res, err := cfg.Run(ctx, env)
	manifestErr := lab.WriteManifest(env.Out, "assess", assess.Name)
	if r, ok := res.(*assess.Result); ok && r != nil {
		fmt.Fprintf(stdout, "results: %s\n\n", env.Out)
		r.Print(stdout)
		lab.WriteReport(env.Out, stdout, stderr)
		if err == nil {
			return errors.Join(assessExit(r), manifestErr)
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		err = fmt.Errorf("interrupted; the probes completed so far are in %s", env.Out)
	case errors.Is(err, assess.ErrRefused):
		err = exitError{assessBadInput, err}
	case errors.Is(err, assess.ErrUnavailable):
		err = exitError{assessUnmade, err}
	}
	return errors.Join(err, manifestErr)
}

// assessExit is the exit of a finished assessment: a broken bound first
// (the stack is too weak, whatever else could not be judged), then a bound
// not judged or a probe whose verdict could not be made.
func assessExit(r *assess.Result) error {
	broken, unjudged := r.Judge()
	unmade := r.Unmade()
	switch {
	case len(broken) > 0:
		return exitError{assessBroken, fmt.Errorf("--fail-on: %d bound(s) broken: %s", len(broken), strings.Join(broken, "; "))}
	case len(unjudged) > 0:
		return exitError{assessUnmade, fmt.Errorf("--fail-on: %d bound(s) not judged: %s", len(unjudged), strings.Join(unjudged, "; "))}
	case len(unmade) > 0:
		return exitError{assessUnmade, fmt.Errorf("%d probe(s) without a verdict: %s", len(unmade), strings.Join(unmade, "; "))}
	}
	return nil
}
