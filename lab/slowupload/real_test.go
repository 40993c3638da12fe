package slowupload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestSlowUploadShapeReal runs the reduced matrix on real Gunicorn +
// NGINX under the published limits: the same shape as on the embedded
// stack, and the upload that outlives --timeout has its worker killed,
// with Gunicorn's WORKER TIMEOUT in its log.
func TestSlowUploadShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	res, env := runShape(t, stack.NameReal)
	timeout := checkShape(t, res, env)
	if !timeout.WorkerTimeouts.Valid || timeout.WorkerTimeouts.Value < 1 {
		t.Errorf("%s: worker timeouts %v, want at least 1", timeout.RunID, timeout.WorkerTimeouts)
	}
	log, err := os.ReadFile(filepath.Join(env.LogDir(), timeout.RunID+"-gunicorn.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "WORKER TIMEOUT") {
		t.Errorf("%s-gunicorn.log lacks WORKER TIMEOUT:\n%s", timeout.RunID, log)
	}
	for _, r := range res.Runs[:3] {
		if r.WorkerTimeouts.Valid && r.WorkerTimeouts.Value != 0 {
			t.Errorf("%s: %v worker timeouts under a 30 s timeout", r.RunID, r.WorkerTimeouts)
		}
	}
}
