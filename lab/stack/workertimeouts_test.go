package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CountWorkerTimeouts counts the lines of the run's own logs, not the
// exporter's nor another run's, and fails when the run left no log.
func TestCountWorkerTimeouts(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"r1-app.log":      "[INFO] Booting worker\n[CRITICAL] WORKER TIMEOUT (pid:12)\n[CRITICAL] WORKER TIMEOUT (pid:13)\n",
		"r1-proxy.log":    "2025/01/01 [warn] buffered to a temporary file\n",
		"r1-exporter.log": "scraped a log saying WORKER TIMEOUT\n",
		"r2-app.log":      "[CRITICAL] WORKER TIMEOUT (pid:14)\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := CountWorkerTimeouts(dir, "r1"); n != 2 || err != nil {
		t.Errorf("r1: %d, %v; want 2", n, err)
	}
	if n, err := CountWorkerTimeouts(dir, "r3"); err == nil || !strings.Contains(err.Error(), "no logs of run r3 in "+dir) {
		t.Errorf("r3 (no logs): %d, %v; want an error naming the run", n, err)
	}
}
