package labtest

import (
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
)

// TestAppsCoverEveryApp: one entry per registered app server, each a
// stack that exists with a server its app runs.
func TestAppsCoverEveryApp(t *testing.T) {
	apps := Apps()
	if len(apps) != len(stack.Apps()) || len(apps) < 4 {
		t.Fatalf("%d apps, %d registered: want one each (embedded, gunicorn, uvicorn, node at least)", len(apps), len(stack.Apps()))
	}
	for _, a := range apps {
		if _, _, err := stack.Lookup(a.Stack); err != nil {
			t.Errorf("%s: %v", a.Stack, err)
		}
		srv, err := stack.ParseServer(a.Server)
		if err != nil {
			t.Errorf("%s %s: %v", a.Stack, a.Server, err)
			continue
		}
		if srv.Workers != 1 {
			t.Errorf("%s %s: %d workers, want 1", a.Stack, a.Server, srv.Workers)
		}
		t.Logf("%s %s", a.Stack, a.Server)
	}
}
