package stack

import (
	"slices"
	"testing"
)

func TestResolveServer(t *testing.T) {
	st, _, err := Lookup(NameEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ResolveServer(st, AsyncServer); !ok || s.Name() != "async" {
		t.Errorf("embedded async: %v %v", s, ok)
	}
	if s, ok := ResolveServer(st, "sync-2"); !ok || s.Name() != "sync-2" {
		t.Errorf("sync-2: %v %v", s, ok)
	}
	if _, ok := ResolveServer(Stack{Name: "none"}, AsyncServer); ok {
		t.Error("a stack without apps resolved async")
	}
}

type asyncCond struct {
	route  Route
	server string
}

func (c asyncCond) RouteName() Route   { return c.route }
func (c asyncCond) ServerName() string { return c.server }

type asyncSpec struct {
	srv string
	rep int
}

// TestExpandRuns: reps outermost, every condition once a rep, "async"
// resolved to the stack's event-loop server; on a stack without one its
// condition is left out and named once, whatever the reps.
func TestExpandRuns(t *testing.T) {
	conds := []asyncCond{{RouteDirect, "sync-2"}, {RouteDirect, AsyncServer}}
	mk := func(c asyncCond, srv Server, rep int) asyncSpec { return asyncSpec{srv.Model, rep} }
	embedded, _, err := Lookup(NameEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	runs, skipped := ExpandRuns(embedded, 2, conds, mk)
	if want := []asyncSpec{{"sync", 1}, {"async", 1}, {"sync", 2}, {"async", 2}}; !slices.Equal(runs, want) || len(skipped) != 0 {
		t.Errorf("embedded: %v, skipped %v; want %v", runs, skipped, want)
	}
	gunicorn, _, err := Lookup("gunicorn+embedded")
	if err != nil {
		t.Fatal(err)
	}
	runs, skipped = ExpandRuns(gunicorn, 3, conds, mk)
	if want := []asyncSpec{{"sync", 1}, {"sync", 2}, {"sync", 3}}; !slices.Equal(runs, want) ||
		!slices.Equal(skipped, []string{"direct async: the gunicorn+embedded stack has no event-loop server"}) {
		t.Errorf("gunicorn: %v, skipped %q", runs, skipped)
	}
}
