package main

import (
	"context"
	"errors"
	"io"

	"github.com/slowlab/slowlab/exporter/exportercmd"
)

func init() {
	register(command{
		name:    "exporter",
		summary: "serve cgroup, process, proxy temp-file and TCP socket metrics per process group",
		run:     runExporter,
	})
}

// runExporter is exportercmd's command line as a slowlab subcommand (also
// the standalone slowlab-exporter binary).
func runExporter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := exportercmd.Run(ctx, "slowlab exporter", args, stdout, stderr)
	var ue exportercmd.UsageError
	if errors.As(err, &ue) {
		return usagef("%s", ue.Msg)
	}
	return err
}
