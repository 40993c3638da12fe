package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// `slowlab record --scrape` of an endpoint that does not answer says the
// scrape error on stderr once, as it happens, not only in the rows and the
// closing count; the rows keep it.
func TestRecordSaysScrapeErrors(t *testing.T) {
	url := "http://" + freeAddr(t) + "/metrics" // nothing listens there
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "record", "--scrape", url, "--interval", "50ms", "--duration", "500ms", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(out, "resource-samples.csv"))
	if err != nil || len(rows) < 2 || rows[0].Error == "" {
		t.Fatalf("resource-samples.csv: %d rows (%v), want at least 2 with an error; stdout:\n%s", len(rows), err, stdout)
	}
	if n := strings.Count(stderr, "scrape "+url+": "); n != 1 || !strings.Contains(stderr, rows[0].Error) {
		t.Errorf("stderr names the scrape error %d times, want once, as the rows say it (%q):\n%s", n, rows[0].Error, stderr)
	}
}
