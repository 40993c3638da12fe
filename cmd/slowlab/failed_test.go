package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// A session in which every run failed exits 1 and says so, with the
// reasons in runs.csv; it does not print an empty table and exit 0.
func TestEveryRunFailedExitsNonZero(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "gunicorn")
	slowlabtest.RequireRoot(t, "the real stack's cgroup limits")
	dir := t.TempDir()
	scenario := filepath.Join(dir, "broken.yaml")
	// Gunicorn refuses the flag and exits: no run can start its stack.
	err := os.WriteFile(scenario, []byte(`experiment: slow-client
stack: real
reps: 2
conditions:
  - {route: direct, server: sync-2, slow_clients: 0}
fast: {duration: 1s}
gunicorn:
  extra_args: ["--no-such-flag"]
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	code, stdout, stderr := runCmd(t, "run", scenario, "--out", out, "--max-host-cpu", "0")
	if code != 1 || !strings.Contains(stderr, "every run failed; the reasons are in "+filepath.Join(out, "runs.csv")) {
		t.Errorf("exit %d, stderr %q: want 1 and the reason", code, stderr)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(out, "runs.csv"))
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs.csv: %d rows, %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Status != recorder.RunFailed || !strings.Contains(r.Reason, "gunicorn exited before it was ready") {
			t.Errorf("run %s: %s %q", r.RunID, r.Status, r.Reason)
		}
	}
	// The table still lists the condition, with no runs and both excluded.
	if !regexp.MustCompile(`(?m)^direct\s+sync-2\s+0\s+0\s+2\s+-\s+-\s+-\s`).MatchString(stdout) {
		t.Errorf("want the condition with runs 0, excluded 2; stdout:\n%s", stdout)
	}
}

// A session that completes with a condition left without a valid run
// (every try of it failed) and another measured ends with a line naming
// the one and exits 4, not 0: the table alone showed the measured row.
func TestConditionWithoutValidRunExits4(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "gunicorn")
	slowlabtest.RequireTool(t, "node")
	slowlabtest.RequireRoot(t, "the real stack's cgroup limits")
	dir := t.TempDir()
	scenario := filepath.Join(dir, "half.yaml")
	// Gunicorn refuses the flag, so sync-2 never starts; Node.js serves
	// node-1, which Gunicorn's flags do not reach.
	err := os.WriteFile(scenario, []byte(`experiment: slow-client
stack: real
reps: 1
conditions:
  - {route: direct, server: sync-2, slow_clients: 0}
  - {route: direct, server: node-1, slow_clients: 0}
fast: {duration: 1s}
gunicorn:
  extra_args: ["--no-such-flag"]
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	code, stdout, stderr := runCmd(t, "run", scenario, "--out", out, "--max-host-cpu", "0")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := "slowlab run: 1 condition without a valid run: direct.sync-2.slow0 (the reasons are in " + filepath.Join(out, "runs.csv") + ")"
	if code != 4 || lines[len(lines)-1] != want {
		t.Errorf("exit %d, last line of stderr %q: want 4 and %q", code, lines[len(lines)-1], want)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(out, "runs.csv"))
	if err != nil || len(runs) != 2 || runs[0].Status != recorder.RunFailed || runs[1].Status != recorder.RunOK {
		t.Fatalf("runs.csv: %+v, %v; want sync-2's run failed and node-1's ok", runs, err)
	}
	if !regexp.MustCompile(`(?m)^direct\s+node-1\s+0\s+1\s`).MatchString(stdout) {
		t.Errorf("want node-1's row with its run; stdout:\n%s", stdout)
	}
}
