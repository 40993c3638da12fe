package sse

import (
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestSSEShapeReal runs the reduced matrix on real Gunicorn + NGINX under
// the published limits (the async server is the real stack's first
// event-loop model): with proxy_http_version 1.1 NGINX passes each event
// on as it is written with proxy_buffering on, off and with
// X-Accel-Buffering: no; with 1.0 and buffering on it holds the stream to
// its end unless X-Accel-Buffering: no; the streams hold both sync
// workers.
func TestSSEShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	res, env := runShape(t, stack.NameReal)
	checkShape(t, res, env)
}
