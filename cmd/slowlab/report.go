package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

func init() {
	register(command{
		name:    "report",
		summary: "write figures (PNG, SVG) and a self-contained report.html from a results directory",
		run:     runReport,
	})
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "DIR\n\n"+
		"Reads the results directory DIR (as written by slowlab reproduce, run or assess, or by\n"+
		"slowlab loadgen --out or merge: the load generator's section) and writes\n"+
		"DIR/figures/*.png and *.svg and DIR/report.html, which loads nothing from the network.", stdout)
	// The command takes no flags besides --help; DIR may come before or
	// after it. parseFlags rejects positional arguments, so they are taken
	// out first.
	var flags, positional []string
	for i, a := range args {
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
		} else {
			positional = append(positional, a)
		}
	}
	if err := parseFlags(fs, flags); err != nil {
		return err
	}
	switch {
	case len(positional) == 0:
		return usagef("which results directory? e.g. slowlab report results/slow-client-20260102T150405Z")
	case len(positional) > 1:
		return usagef("unexpected argument %q: give one results directory (see --help)", positional[1])
	}
	if err := parsedOnly(ctx); err != nil {
		return err // the directory is data, looked at only by a run
	}
	dir := positional[0]
	if st, err := os.Stat(dir); err != nil {
		return usagef("results directory %s: %v", dir, unwrapPathError(err))
	} else if !st.IsDir() {
		return usagef("results directory %s: not a directory", dir)
	}

	// A killed session's cut last row is left out of the report, said
	// once per file.
	defer recorder.NoteCutRows(func(c recorder.CutRow) {
		fmt.Fprintf(stderr, "slowlab report: warning: %s\n", c)
	})()
	rep, err := report.Write(dir, lab.ReportSections())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", rep.HTML)
	fmt.Fprintf(stdout, "%s (files relative to %s):\n", report.Count(len(rep.Figures), "figure"), dir)
	for _, f := range rep.Figures {
		fmt.Fprintf(stdout, "  %s: %s (%d series) %s\n", f.Name, f.Title, f.Series, strings.Join(f.Files, " "))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	return nil
}

// unwrapPathError drops the operation and path from an *os.PathError,
// which the message names already.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
