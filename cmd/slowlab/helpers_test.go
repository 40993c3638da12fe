package main

import (
	"net/http"
	"os"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// requireTool returns the path of a real component the test needs:
// missing, it skips, except with CI=true, where it fails the run.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	return slowlabtest.RequireTool(t, name)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return slowlabtest.FreeAddr(t)
}

// waitReady waits until url answers 200, failing with the log at logPath
// if it never does.
func waitReady(t *testing.T, url, logPath string) {
	t.Helper()
	slowlabtest.WaitFor(t, url+" ready", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { b, _ := os.ReadFile(logPath); return string(b) })
}
