package appserver

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// A worker model is defined once, in ModelSpecs: one added there is
// valid, named and slotted by its spec and served by its serve function,
// with nothing else to change.
func TestModelSpecsDefineModels(t *testing.T) {
	saved := ModelSpecs
	t.Cleanup(func() { ModelSpecs = saved })
	var served atomic.Bool
	ModelSpecs = append(slices.Clone(saved), ModelSpec{Model: "stub", Sized: true, Summary: "a stub",
		serve: func(s *Server, app net.Listener, serve func(*http.Server, net.Listener), g *errgroup.Group) {
			served.Store(true)
			serveSync(s, app, serve, g)
		}})
	o := DefaultOptions()
	o.Model, o.Workers = "stub", 3
	if o.Name() != "stub-3" || o.Slots() != 3 {
		t.Errorf("stub model: name %q, slots %d; want stub-3, 3", o.Name(), o.Slots())
	}
	_, base, _ := startServer(t, o)
	if err := getFast(base, 20*time.Second); err != nil || !served.Load() {
		t.Errorf("stub model: /fast %v, served by its spec %v", err, served.Load())
	}
	if got := ModelNames("|") + ": " + ModelHelp(); !strings.HasSuffix(got, "async (unbounded), stub (a stub)") || !strings.HasPrefix(got, "sync|gthread|async|stub: ") {
		t.Errorf("usage and help: %q", got)
	}
	o.Model = "nope"
	if err := o.Validate(); err == nil || err.Error() != `model "nope": allowed sync, gthread, async, stub` {
		t.Errorf("unknown model: %v", err)
	}
}
