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
	"strconv"
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

// Count is an integer flag that also records whether it was given (a
// default alone cannot tell "not given" from its value).
type Count struct {
	N     int
	Given bool
}

func (c *Count) String() string { return "" }

// Set implements flag.Value.
func (c *Count) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q: want a whole number", v)
	}
	c.N, c.Given = n, true
	return nil
}
