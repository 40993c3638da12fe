package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// slowlab runs this test binary as the slowlab command (see TestMain).
func slowlab(t *testing.T, stdin []byte, args ...string) (stdout []byte, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("slowlab %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes(), errb.String()
}

// `slowlab reproduce EXPERIMENT --print-scenario | slowlab run -` runs the
// experiment the flags describe, for long-poll and latency-gap alike.
//
// The long-poll window is 1 s: what is checked is a row per run in
// groups.csv and the stored scenario, which a shorter window writes the
// same.
func TestPrintedScenarioRunsFromStdin(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs long-poll's embedded stack, its children and load, for seconds")
	for _, tc := range []struct {
		args []string
		file string
		rows int
	}{
		{[]string{"long-poll", "--stack", "embedded", "--seconds", "1", "--wait", "1s", "--condition", "sync-2:1:2", "--condition", "gthread-1x2:1:2"}, "groups.csv", 2},
		{[]string{"latency-gap", "--runs", "3", "--delay", "0,5ms", "--sizes", "1k"}, "gap.csv", 2},
	} {
		if tc.args[0] == "latency-gap" {
			slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
		}
		scenario, _ := slowlab(t, nil, append(append([]string{"reproduce"}, tc.args...), "--print-scenario")...)
		out := filepath.Join(t.TempDir(), "results")
		runArgs := []string{"run", "-", "--out", out}
		if tc.args[0] == "long-poll" {
			// As the other CLI tests do: a loaded machine must not abort
			// the runs whose rows this test counts.
			runArgs = append(runArgs, "--max-host-cpu", "0")
		}
		stdout, _ := slowlab(t, scenario, runArgs...)
		if !bytes.Contains(stdout, []byte("results: "+out)) {
			t.Errorf("%s: stdout\n%s", tc.args[0], stdout)
		}
		b, err := os.ReadFile(filepath.Join(out, tc.file))
		if err != nil || bytes.Count(b, []byte("\n")) != tc.rows+1 {
			t.Errorf("%s: %s has %d lines (%v), want a header and %d rows", tc.args[0], tc.file, bytes.Count(b, []byte("\n")), err, tc.rows)
		}
		stored, err := os.ReadFile(filepath.Join(out, "scenario.yaml"))
		if err != nil || !bytes.Contains(stored, []byte("experiment: "+tc.args[0])) {
			t.Errorf("%s: scenario.yaml %q, %v", tc.args[0], stored, err)
		}
	}
}
