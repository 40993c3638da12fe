package lab

import (
	"slices"
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
)

type cond struct {
	route  stack.Route
	server string
}

func (c cond) RouteName() stack.Route { return c.route }
func (c cond) ServerName() string     { return c.server }

type spec struct {
	srv string
	rep int
}

// TestExpandRuns: reps outermost, every condition once a rep, "async"
// resolved to the stack's event-loop server; on a stack without one its
// condition is left out and named once, whatever the reps.
func TestExpandRuns(t *testing.T) {
	conds := []cond{{stack.RouteDirect, "sync-2"}, {stack.RouteDirect, AsyncServer}}
	mk := func(c cond, srv stack.Server, rep int) spec { return spec{srv.Model, rep} }
	embedded, _, err := stack.Lookup(stack.NameEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	runs, skipped := ExpandRuns(embedded, 2, conds, mk)
	if want := []spec{{"sync", 1}, {"async", 1}, {"sync", 2}, {"async", 2}}; !slices.Equal(runs, want) || len(skipped) != 0 {
		t.Errorf("embedded: %v, skipped %v; want %v", runs, skipped, want)
	}
	gunicorn, _, err := stack.Lookup("gunicorn+embedded")
	if err != nil {
		t.Fatal(err)
	}
	runs, skipped = ExpandRuns(gunicorn, 3, conds, mk)
	if want := []spec{{"sync", 1}, {"sync", 2}, {"sync", 3}}; !slices.Equal(runs, want) ||
		!slices.Equal(skipped, []string{"direct async: the gunicorn+embedded stack has no event-loop server"}) {
		t.Errorf("gunicorn: %v, skipped %q", runs, skipped)
	}
}
