package sse

import (
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
)

// TestSSEShapeReal runs the reduced matrix on real Gunicorn + NGINX under
// the published limits (the async server is the real stack's first
// event-loop model): NGINX passes each event on as it is written with
// proxy_buffering on, off and with X-Accel-Buffering: no, and the streams
// hold both sync workers.
func TestSSEShapeReal(t *testing.T) {
	res, env := runShape(t, stack.NameReal)
	checkShape(t, res, env)
}
