// Package cliflag is the command-line convention every slowlab binary
// follows: a mistake is one line (a UsageError, exit status 2), --help
// prints the whole usage to standard output. It owns flag sets and their
// parsing, and the one list-flag type (List); what the flags mean is each
// command's.
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is a mistake in the command line: the caller prints it and
// exits with status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// NewFlagSet returns a flag set named prog whose parse errors are returned,
// not printed; its usage ("Usage: PROG SYNOPSIS" and the flags) goes to
// stdout on --help.
func NewFlagSet(prog, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: %s %s\n\nFlags:\n", prog, synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// Parse parses args into fs: --help prints the usage and returns
// flag.ErrHelp; any other mistake, a stray argument included, is a
// one-line UsageError.
func Parse(fs *flag.FlagSet, args []string) error {
	// The flag package prints usage on every parse error; keep that quiet
	// and print it only for --help, so a mistake is one line.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return flag.ErrHelp
	}
	if err != nil {
		return Usagef("%v (see --help)", err)
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (see --help)", fs.Arg(0))
	}
	return nil
}
