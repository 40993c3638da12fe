package main

import (
	"context"
	"flag"
	"io"

	"github.com/slowlab/slowlab/lab/longpoll"
)

func init() {
	register(command{name: longpoll.CmdProbeLoop, summary: "(run by long-poll) its load generator, in its own cgroup: result lines on stdout",
		run: runProbeLoop})
}

// runProbeLoop is `slowlab probe-loop`: tracing as the OTEL_* environment
// it inherits from the session asks (sample ratio: OTEL_TRACES_SAMPLER,
// else 1), as the session's load generator would have traced.
func runProbeLoop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tp, stop, err := addTracingFlags(flag.NewFlagSet(longpoll.CmdProbeLoop, flag.ContinueOnError)).start(ctx, "slowlab-loadgen", stderr)
	if err != nil {
		return err
	}
	defer stop()
	return longpoll.RunProbeLoop(ctx, args, stdout, tp)
}
