// Command slowlab-exporter is the slowlab exporter alone: the same flags,
// metrics and behaviour as `slowlab exporter`, in a binary that links
// nothing else (the Debian package's systemd unit runs it). See
// exporter/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/slowlab/slowlab/exporter/exportercmd"
	_ "github.com/slowlab/slowlab/internal/buildinfo" // the version when -ldflags set none
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the exporter and returns the exit status: 0 (also for --help),
// 2 for a bad command line, 1 for any other error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := exportercmd.Run(ctx, "slowlab-exporter", args, stdout, stderr)
	var ue exportercmd.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "slowlab-exporter:", err)
		return 2
	}
	fmt.Fprintln(stderr, "slowlab-exporter:", err)
	return 1
}
