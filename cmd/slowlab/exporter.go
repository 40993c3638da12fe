package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"

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
	if parsedOnly(ctx) != nil {
		return parseExporterOnly(ctx, args)
	}
	err := exportercmd.Run(ctx, "slowlab exporter", args, stdout, stderr)
	var ue exportercmd.UsageError
	if errors.As(err, &ue) {
		return usagef("%s", ue.Msg)
	}
	return err
}

// parseExporterOnly is the exporter's parse-only point: exportercmd parses
// the flags, each value by its type, and stops at the --help added after
// them, printing its usage to nowhere. The groups and files the flags name
// are checked only by a run (exportercmd reads them with the filesystem).
func parseExporterOnly(ctx context.Context, args []string) error {
	err := exportercmd.Run(ctx, "slowlab exporter", append(slices.Clone(args), "--help"), io.Discard, io.Discard)
	var ue exportercmd.UsageError
	switch {
	case errors.As(err, &ue):
		return usagef("%s", ue.Msg)
	case errors.Is(err, flag.ErrHelp):
		return errParseOnly
	case err == nil:
		return errors.New("parse only: exportercmd did not stop at --help")
	}
	return err
}
