package main

import (
	"context"
	"flag"
	"io"

	"github.com/slowlab/slowlab/lab/slowclient"
)

func init() {
	register(command{name: slowclient.CmdSlowLoad, summary: "(run by slow-client) its load generator, in its own cgroup: wire lines on stdout",
		run: runSlowLoad})
}

// runSlowLoad is `slowlab slow-load`, traced as the OTEL_* environment it
// inherits from the session asks, as probe-loop is.
func runSlowLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tp, stop, err := addTracingFlags(flag.NewFlagSet(slowclient.CmdSlowLoad, flag.ContinueOnError)).start(ctx, "slowlab-loadgen", stderr)
	if err != nil {
		return err
	}
	defer stop()
	return slowclient.RunSlowLoad(ctx, args, stdout, tp)
}
