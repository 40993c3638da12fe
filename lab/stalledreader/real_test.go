package stalledreader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestStalledReaderShapeReal runs the reduced matrix on real Gunicorn +
// NGINX under the published limits: the same shape as on the embedded
// stack, with Gunicorn's WORKER TIMEOUT in its log for the direct run
// and none behind NGINX, which logs its send_timeout cuts at info
// (checkShape asserts one per proxied download) and nothing above info.
func TestStalledReaderShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	res, env := runShape(t, stack.NameReal)
	direct, proxied := checkShape(t, res, env)
	log, err := os.ReadFile(filepath.Join(env.LogDir(), direct.RunID+"-gunicorn.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "WORKER TIMEOUT") {
		t.Errorf("%s-gunicorn.log lacks WORKER TIMEOUT:\n%s", direct.RunID, log)
	}
	nginx, err := os.ReadFile(filepath.Join(env.LogDir(), proxied.RunID+"-nginx.log"))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(nginx)) {
		if strings.Contains(l, "timed out") && !strings.Contains(l, "[info]") {
			t.Errorf("NGINX logged a timeout above info: %s", l)
		}
	}
}
