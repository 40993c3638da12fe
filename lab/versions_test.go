package lab_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// environment.json records what the real stack's components report: each
// app server's version (Gunicorn, Uvicorn, Node.js), the proxy's, the
// Python and gevent the Python apps run with, and the ws module Node.js
// serves /ws with.
func TestEnvironmentRecordsStackVersions(t *testing.T) {
	st, _, err := stack.Lookup(stack.NameReal)
	slowlabtest.Require(t, err == nil, fmt.Sprintf("the real stack: %v", err))
	for _, tool := range []string{"gunicorn", "node", "nginx"} {
		slowlabtest.RequireTool(t, tool)
	}
	dir := t.TempDir()
	if err := recorder.AppendEnvironment(dir, lab.Environment(&lab.Env{Out: dir, Stack: st}, "slow-client")); err != nil {
		t.Fatal(err)
	}
	sessions, err := recorder.ReadEnvironment(dir)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("environment.json: %d sessions, %v", len(sessions), err)
	}
	v := sessions[0].Versions
	version := regexp.MustCompile(`^v?[0-9]+\.[0-9]+`)
	for name, prefix := range map[string]string{"gunicorn": "gunicorn (version ", "uvicorn": "", "node": "", "nginx": "nginx version: nginx/", "python3": "Python ", "gevent": "", "ws": ""} {
		if got := v[name]; !strings.HasPrefix(got, prefix) || !version.MatchString(strings.TrimPrefix(got, prefix)) {
			t.Errorf("versions[%q] = %q, want %q and a version; versions %v", name, got, prefix, v)
		}
	}
	embedded, _, _ := stack.Lookup(stack.NameEmbedded)
	if v := lab.Environment(&lab.Env{Out: dir, Stack: embedded}, "slow-client").Versions; len(v) != 0 {
		t.Errorf("embedded stack: versions %v, want none (slowlab's sha256 is the embedded servers' version)", v)
	}
}
