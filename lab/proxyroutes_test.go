package lab_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
)

// A scenario whose conditions name a route the stack's proxy cannot run
// is refused by that route's name when the session resolves its stack,
// before anything starts: NGINX's routes on HAProxy, HAProxy's on NGINX.
func TestProxyRoutesRefusedBeforeStart(t *testing.T) {
	slowlabtest.RequireTool(t, "haproxy")
	slowlabtest.RequireTool(t, "nginx")
	slowlabtest.RequireTool(t, "gunicorn")
	for _, tc := range []struct{ scenario, want string }{
		{"experiment: slow-client\nstack: gunicorn+haproxy\nconditions:\n  - {route: proxy-buffering-on, server: sync-2, slow_clients: 2}\n",
			"route proxy-buffering-on: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)"},
		{"experiment: slow-upload\nstack: gunicorn+haproxy\nconditions:\n  - {route: proxy-request-buffering-on, server: sync-2, uploaders: 2}\n",
			"route proxy-request-buffering-on: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)"},
		{"experiment: slow-client\nstack: gunicorn+nginx\nconditions:\n  - {route: haproxy-default, server: sync-2, slow_clients: 2}\n",
			"route haproxy-default: only the haproxy proxy runs it (the gunicorn+nginx stack's proxy is nginx)"},
	} {
		path := filepath.Join(t.TempDir(), "scenario.yaml")
		if err := os.WriteFile(path, []byte(tc.scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := lab.LoadScenario(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "results")
		_, err = lab.Options{Out: out, NoLimits: true}.Env(cfg, io.Discard)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.scenario, err, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: the refused session made its results directory", tc.scenario)
		}
	}
}
