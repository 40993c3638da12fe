package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// A results file that cannot be written is an error the user sees, with
// the cause, and the exit status says so, even though every request
// succeeded; the rows written before the disk filled stay readable.
func TestLoadgenDiskFull(t *testing.T) {
	slowlabtest.Timing(t)
	out := filepath.Join(slowlabtest.TinyDisk(t, 16<<10), "results")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	// 2000 requests of about 100 bytes of CSV each do not fit in 16 KiB.
	code, stdout, stderr := runCmd(t, "loadgen", "--target", srv.URL+"/fast", "--rate", "1000", "--duration", "2s", "--out", out)
	if code != 1 || !strings.Contains(stderr, "requests.csv") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("exit %d, stderr %q: want 1, naming requests.csv and the full disk", code, stderr)
	}
	if !strings.Contains(stdout, "requests 2000: ok 2000") {
		t.Errorf("stdout should still summarize what was measured:\n%s", stdout)
	}
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(out, "requests.csv"))
	if len(rows) == 0 || len(rows) >= 2000 {
		t.Errorf("requests.csv: %d rows (%v); want the rows that fitted", len(rows), err)
	}
}
