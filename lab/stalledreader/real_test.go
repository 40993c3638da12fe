package stalledreader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
)

// TestStalledReaderShapeReal runs the reduced matrix on real Gunicorn +
// NGINX under the published limits: the same shape as on the embedded
// stack, with Gunicorn's WORKER TIMEOUT in its log for the direct run
// and none behind NGINX, whose send_timeout is silent at error_log warn.
func TestStalledReaderShapeReal(t *testing.T) {
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
	if strings.Contains(string(nginx), "timed out") {
		t.Logf("NGINX logged a timeout at warn level:\n%s", nginx)
	}
}
