package main

import (
	"context"
	"flag"
	"io"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/lab/longpoll"
	"github.com/slowlab/slowlab/lab/slowclient"
)

func init() {
	register(loadChild(slowclient.CmdSlowLoad, "(run by slow-client) its load generator, in its own cgroup: wire lines on stdout",
		slowclient.RunSlowLoad))
	register(loadChild(longpoll.CmdProbeLoop, "(run by long-poll) its load generator, in its own cgroup: result lines on stdout",
		longpoll.RunProbeLoop))
}

// loadChild is the subcommand an experiment's session starts as its load
// generator (instrument.Instruments.RunLoad), traced as the OTEL_* environment it
// inherits from the session asks (sample ratio: OTEL_TRACES_SAMPLER, else
// 1), as the session's load generator would have traced.
func loadChild(name, summary string, run func(context.Context, []string, io.Writer, trace.TracerProvider) error) command {
	return command{name: name, summary: summary, run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		tp, stop, err := addTracingFlags(flag.NewFlagSet(name, flag.ContinueOnError)).start(ctx, "slowlab-loadgen", stderr)
		if err != nil {
			return err
		}
		defer stop()
		return run(ctx, args, stdout, tp)
	}}
}
