package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
)

func init() {
	register(command{name: "reproduce", summary: "run a published experiment end to end and write its results directory", run: runReproduce})
}

var experiments = []string{"slow-client", "long-poll", "latency-gap"}

var stacks = []string{"auto", "embedded", "gunicorn-nginx"}

func runReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce", "slow-client|long-poll|latency-gap [--stack auto|embedded|gunicorn-nginx] [--reps N] [--out DIR] [--quick]", stdout)
	stack := fs.String("stack", "auto", "system under test: auto (gunicorn-nginx when both are on PATH, else embedded), embedded (nothing to install), gunicorn-nginx")
	reps := fs.Int("reps", 3, "repetitions of each condition")
	quick := fs.Bool("quick", false, "one repetition per condition (same as --reps 1)")
	out := fs.String("out", "", "results directory (default results/<experiment>-<UTC timestamp>)")
	seconds := fs.Float64("seconds", 60, "long-poll: probing window in seconds")
	wait := fs.Duration("wait", 30*time.Second, "long-poll: how long each held request waits before its 204")
	metricsAddr := fs.String("metrics-addr", "", "serve the load generator's /metrics here during the run, e.g. 127.0.0.1:9101 (off when empty)")
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
	if !oneOf(*stack, stacks) {
		return usagef("--stack %q: allowed %s", *stack, strings.Join(stacks, ", "))
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
	if experiment == "latency-gap" {
		return fmt.Errorf("experiment %s is not built yet; slow-client and long-poll are", experiment)
	}
	st, err := chooseStack(*stack, stderr)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join("results", experiment+"-"+time.Now().UTC().Format("20060102T150405Z"))
	}
	metrics, stopMetrics, err := serveLoadgenMetrics(*metricsAddr, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()

	o := lab.Options{Out: *out, Stack: st, Progress: stderr, Metrics: metrics}
	if experiment == "long-poll" {
		e := lab.DefaultLongPoll()
		e.Seconds = time.Duration(*seconds * float64(time.Second))
		e.Wait = *wait
		fmt.Fprintf(stderr, "long-poll on the %s stack: %d conditions of %s each, results in %s\n", st.Name(), len(e.Conditions), e.Lead+e.Seconds, *out)
		res, err := lab.RunLongPoll(ctx, e, o)
		if res != nil {
			fmt.Fprintf(stdout, "results: %s\n\n", res.Dir)
			lab.PrintLongPoll(stdout, res.Groups)
		}
		return interrupted(err, *out)
	}
	e := lab.DefaultSlowClient()
	e.Reps = *reps
	fmt.Fprintf(stderr, "slow-client on the %s stack: %d runs, results in %s\n", st.Name(), len(e.Runs()), *out)
	res, err := lab.RunSlowClient(ctx, e, o)
	if res != nil {
		fmt.Fprintf(stderr, "resource sampling jitter: %s\n", res.SamplingJitter)
		fmt.Fprintf(stdout, "results: %s\n\n", res.Dir)
		lab.PrintConditions(stdout, res.Conditions)
	}
	return interrupted(err, *out)
}

// interrupted words a cancelled experiment's error.
func interrupted(err error, out string) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; runs completed so far are in %s", out)
	}
	return err
}

// chooseStack resolves --stack and says which stack auto picked and why.
func chooseStack(name string, stderr io.Writer) (lab.Stack, error) {
	switch name {
	case "embedded":
		return lab.Embedded{}, nil
	case "gunicorn-nginx":
		return nil, errors.New("--stack gunicorn-nginx: this build has no Gunicorn + NGINX stack yet; use --stack embedded")
	}
	_, gerr := exec.LookPath("gunicorn")
	_, nerr := exec.LookPath("nginx")
	why := "gunicorn-nginx stack not in this build"
	if gerr != nil || nerr != nil {
		why = "gunicorn and nginx not both on PATH"
	}
	fmt.Fprintf(stderr, "--stack auto: using embedded (%s)\n", why)
	return lab.Embedded{}, nil
}

func oneOf(s string, allowed []string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}
