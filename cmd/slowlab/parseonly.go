package main

import (
	"context"
	"errors"
)

// errParseOnly ends a command whose context asks for parsing only
// (withParseOnly) at the point where its command line has been parsed and
// validated as it would be for a run, before it starts, listens, reads its
// inputs' data or writes anything: the seam that lets a test check the
// command lines the docs show without running them. A command line that
// is wrong returns its usage error as ever.
var errParseOnly = errors.New("parse only: the command line is valid; nothing was run")

type parseOnlyKey struct{}

// withParseOnly is ctx asking each command to stop at its parse-only point.
func withParseOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, parseOnlyKey{}, true)
}

// parsedOnly is errParseOnly when ctx asks for parsing only, else nil.
// Each command calls it once its whole command line is validated, before
// anything else.
func parsedOnly(ctx context.Context) error {
	if ctx.Value(parseOnlyKey{}) != nil {
		return errParseOnly
	}
	return nil
}
