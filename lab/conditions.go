package lab

import (
	"errors"
	"fmt"

	"github.com/slowlab/slowlab/lab/stack"
)

// ParsedServers is the servers a matrix's conditions name, for
// Stacked.Servers: each condition's server (name) parsed, leaving out
// names that do not parse (Validate reports those) and stack.AsyncServer,
// the stack's own event-loop server that stack.ExpandRuns resolves (a
// stack without one skips the condition), not a model it must run.
func ParsedServers[C any](conds []C, name func(C) string) []stack.Server {
	var out []stack.Server
	for _, c := range conds {
		if s, err := stack.ParseServer(name(c)); err == nil && name(c) != stack.AsyncServer {
			out = append(out, s)
		}
	}
	return out
}

// ErrNoConditions is ValidateConditions' error for a matrix without any.
var ErrNoConditions = errors.New("conditions: none given")

// ValidateConditions checks a matrix's conditions, naming a bad one by
// its YAML path: none given is ErrNoConditions, and the first condition
// whose validate fails is conditions[i].<its error>.
func ValidateConditions[C any](conds []C, validate func(C) error) error {
	if len(conds) == 0 {
		return ErrNoConditions
	}
	for i, c := range conds {
		if err := validate(c); err != nil {
			return fmt.Errorf("conditions[%d].%w", i, err)
		}
	}
	return nil
}

// RoutesOf is the routes a matrix's conditions name, for Routed.Routes.
func RoutesOf[C any](conds []C, route func(C) stack.Route) []stack.Route {
	out := make([]stack.Route, 0, len(conds))
	for _, c := range conds {
		out = append(out, route(c))
	}
	return out
}
