package main

import (
	"context"
	"fmt"
	"io"

	"github.com/slowlab/slowlab/internal/buildinfo"
)

func init() {
	register(command{name: "version", summary: "which slowlab this is (also slowlab --version)", run: runVersion})
}

// runVersion prints the version (internal/buildinfo: a release's, or the
// one the go command stamped from the checkout), the commit and the Go
// that built it, in the layout of slowlab-exporter --version.
func runVersion(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", "\n\nPrints which slowlab this is: its version (a release's, else the one the go command stamped\n"+
		"from the checkout with -buildvcs=true, else devel), the commit and the Go that built it; a\n"+
		"branch, build user, build date or tags nobody stamped is left out.", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, buildinfo.Text("slowlab"))
	return nil
}
