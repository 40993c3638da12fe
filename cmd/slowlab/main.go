// Command slowlab reproduces slow-client experiments (slow downloads,
// uploads, long-polls and streams starving an app server's workers behind
// a proxy) on a real or an embedded stack and watches them with Prometheus
// metrics. It is wiring only: each subcommand lives in its own file and
// registers itself with register; this file only dispatches.
//
// The subcommands:
//
//   - reproduce (reproduce.go): run a published experiment end to end;
//   - run (run.go): run a scenario file, any experiment with its own
//     matrix, stack, limits and settings;
//   - assess (assess.go): how many slow clients of each kind take a
//     stack down, what held it and what fixes it (lab/assess);
//   - report (report.go): figures and report.html from a results directory;
//   - record (record.go): sample resources into resource-samples.csv;
//   - loadgen (loadgen.go): open-loop load and slow readers to any target,
//     whole or as one shard of N (loadrecord.go: its loadgen.json, whose
//     format and report section are lab/loadgendir's; loadsummary.go: the
//     end-of-run summary, text or --json);
//   - merge (merge.go): the shards' results directories merged into one;
//   - target (target.go), proxy (proxy.go): the embedded app server and
//     proxy;
//   - exporter (exporter.go): the exporter, as slowlab-exporter runs it;
//   - cleanup (cleanup.go): remove the cgroups killed sessions left behind;
//   - version (version.go, also --version): which slowlab this is;
//   - slow-load (loadchild.go) and probe-loop (loadchild.go): the load
//     generators of slow-client and long-poll, run by them as a child in
//     the load generator's own cgroup, not by hand.
//
// The experiments, each a package that registers itself with
// lab.Register and is imported by lab/experiments (a test keeps this list
// equal to the registry): buffer-sweep, h2-slow-client, idle-connections,
// latency-gap, long-poll, slow-client, slow-upload, sse, stalled-reader,
// temp-cliff, temp-disk-full and websocket. `slowlab reproduce --help`
// lists them from the registry.
//
// What it leaves to others: the experiments, their scenarios and sessions
// are lab's; the stack is lab/stack's; measuring is loadgen's; results
// files are recorder's; figures are report's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/slowlab/slowlab/cgroup"
	_ "github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/cliflag"
)

// command is one slowlab subcommand. run parses its own flags from args.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; each subcommand file calls it from init.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("slowlab: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError ends a command with its own exit status, documented in that
// command's --help, after err is printed like any other error.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func main() {
	// A child the lab starts in its own cgroup joins it before anything else.
	if err := cgroup.JoinFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "slowlab: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), endSignals()...)
	ctx, interrupt := context.WithCancel(ctx)
	stdout, stderr := guardPipes(interrupt)
	code := run(ctx, os.Args[1:], stdout, stderr)
	interrupt()
	stop()
	os.Exit(code)
}

// endSignals are the signals that interrupt a command, which then stops
// what it started and keeps what it measured: SIGINT, SIGTERM, and SIGHUP
// (the terminal closed) unless it is ignored, as under nohup.
func endSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// run executes one command line and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printUsage(stdout)
		return 2
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1:
		printUsage(stdout)
		return 0
	case args[0] == "help":
		// slowlab help CMD is slowlab CMD --help.
		args = []string{args[1], "--help"}
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "slowlab: unknown command %q (allowed: %s)\n", args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "slowlab %s: %v\n", c.name, err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "slowlab reproduces web-serving experiments (slow clients, long-polls, the server's blind spot) and watches them.")
	fmt.Fprintln(w, "\nUsage: slowlab COMMAND [flags]   (slowlab help COMMAND, or slowlab COMMAND --help, for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// newFlagSet returns the subcommand's flag set (cliflag's conventions).
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	return cliflag.NewFlagSet("slowlab "+name, synopsis, stdout)
}

// parseFlags parses args into fs (cliflag.Parse): --help prints usage and
// returns flag.ErrHelp; any other mistake is a one-line usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := cliflag.Parse(fs, args)
	var ue cliflag.UsageError
	if errors.As(err, &ue) {
		return usagef("%s", ue.Msg)
	}
	return err
}
