package stack

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// stubApp is an app server added the way CONTRIBUTING.md says, in this
// one file: a component that implements App and registers itself. It
// serves with the embedded app (its "app") under a model name of its own.
type stubApp struct{ embeddedApp }

func (stubApp) Name() string    { return "stubapp" }
func (stubApp) Real() bool      { return true }
func (stubApp) Models() []Model { return []Model{{Name: "stubsync", Sized: true}} }

func (stubApp) Start(ctx context.Context, d Deployment, s Settings, cg *cgroup.Cgroup) (RunningApp, error) {
	d.Server.Model = "sync"
	return embeddedApp{}.Start(ctx, d, s, cg)
}

// TestAppServerIsOneFile: once registered, with nothing else changed, the
// stub app's model is a server label (ParseServer, ModelSyntax), it
// composes with any proxy by name (stubapp+embedded), the real stack
// picks it by model, and it serves the shared endpoints through the
// stack on every route.
func TestAppServerIsOneFile(t *testing.T) {
	RegisterApp(stubApp{})
	t.Cleanup(func() { apps = slices.DeleteFunc(apps, func(a App) bool { return a.Name() == "stubapp" }) })

	srv, err := ParseServer("stubsync-2")
	if err != nil || srv.Workers != 2 {
		t.Fatalf("ParseServer(stubsync-2): %+v, %v", srv, err)
	}
	if !strings.Contains(ModelSyntax(), "stubsync-W") {
		t.Errorf("ModelSyntax %q lacks stubsync-W", ModelSyntax())
	}
	slowlabtest.RequireTool(t, "nginx")
	real, _, err := Lookup(NameReal, srv)
	if err != nil || !slices.ContainsFunc(real.Apps, func(a App) bool { return a.Name() == "stubapp" }) {
		t.Errorf("the real stack for stubsync-2: %v, %v: want the stub app in it", real.Apps, err)
	}
	st := lookup(t, "stubapp+embedded", "stubsync-2")
	for _, route := range []Route{RouteDirect, RouteBufferingOn} {
		s := startReal(t, st, route, "stubsync-2", 100_000)
		if resp, body := get(t, s.run.URL()+"/fast", nil); resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("%s /fast: %s, %q", route, resp.Status, body)
		}
		if resp, body := get(t, s.run.URL()+"/large", nil); resp.StatusCode != http.StatusOK || len(body) != 100_000 {
			t.Errorf("%s /large: %s, %d bytes", route, resp.Status, len(body))
		}
		s.stopAndCheck(t)
	}
}
