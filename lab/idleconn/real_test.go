package idleconn

import (
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestIdleShapeReal is the shape on Gunicorn sync (--timeout kills the
// worker, and the client sees a FIN) and NGINX (client_header_timeout: it
// logs a 408 but sends nothing).
func TestIdleShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	c := short("sync-2", 6, 8*time.Second, stack.RouteDirect, stack.RouteBufferingOn)
	checkShape(t, runIdle(t, c, labtest.Env(t, stack.NameReal)))
}

// TestGthreadHoldsIdleReal: Gunicorn 20's gthread worker hands an
// accepted connection to a thread at once, which waits for its request
// however long; --timeout does not end it.
func TestGthreadHoldsIdleReal(t *testing.T) {
	slowlabtest.Timing(t)
	checkGthreadHolds(t, stack.NameReal)
}

// Uvicorn and Node.js have no worker timeout: a run that sets one fails
// with the reason, before anything is held, and leaves nothing running.
func TestAppTimeoutRefusedReal(t *testing.T) {
	slowlabtest.Timing(t)
	c := short("uvicorn-1", 1, time.Second, stack.RouteDirect)
	c.ServerNames = []string{"uvicorn-1", "node-1"}
	env := labtest.Env(t, stack.NameReal)
	r, err := c.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range r.(*Result).Runs {
		server, _, _ := strings.Cut(run.Server, "-")
		if run.Status != recorder.RunFailed || !strings.Contains(run.Reason, "app timeout 3s: "+server+" has no worker timeout") {
			t.Errorf("%s: %s %q; want failed: %s has no worker timeout", run.RunID, run.Status, run.Reason, server)
		}
		if run.Connected != 0 || run.FastSent != 0 {
			t.Errorf("%s: %d connections held, %d /fast sent by a run that could not start", run.RunID, run.Connected, run.FastSent)
		}
	}
	if !r.AllFailed() {
		t.Error("AllFailed is false, every run failed")
	}
}
