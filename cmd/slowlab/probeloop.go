package main

import (
	"context"
	"io"

	"github.com/slowlab/slowlab/lab/longpoll"
)

func init() {
	register(command{name: longpoll.CmdProbeLoop, summary: "(run by long-poll) its load generator, in its own cgroup: result lines on stdout",
		run: func(ctx context.Context, args []string, stdout, _ io.Writer) error {
			return longpoll.RunProbeLoop(ctx, args, stdout)
		}})
}
