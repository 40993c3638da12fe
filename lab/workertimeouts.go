package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slowlab/slowlab/appserver"
)

// workerTimeout is what Gunicorn's master logs when it kills a worker
// that outlived --timeout, "[CRITICAL] WORKER TIMEOUT (pid:1234)", and
// the embedded sync model alike (appserver.WorkerTimeoutLog).
var workerTimeout = []byte(appserver.WorkerTimeoutLog)

// CountWorkerTimeouts counts the WORKER TIMEOUT lines in a run's logs
// (LOGDIR/RUNID-*.log, the exporter's left out). It fails when no log of
// the run is there.
func CountWorkerTimeouts(logDir, runID string) (int, error) {
	paths, err := filepath.Glob(filepath.Join(logDir, runID+"-*.log"))
	if err != nil || len(paths) == 0 {
		return 0, fmt.Errorf("no logs of run %s in %s", runID, logDir)
	}
	n := 0
	for _, p := range paths {
		if strings.Contains(filepath.Base(p), "exporter") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, err
		}
		for line := range bytes.Lines(b) {
			if bytes.Contains(line, workerTimeout) {
				n++
			}
		}
	}
	return n, nil
}
