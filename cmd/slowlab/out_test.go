package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutRefusedBeforeStart: an --out that holds files, or that is not a
// directory, is a usage error (exit 2) on one line naming it, before
// anything starts: nothing is written into it.
func TestOutRefusedBeforeStart(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "hops.csv"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(file, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	holds := "the directory holds another session's results (hops.csv): give a new results directory"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "slow-client", "--quick", "--stack", "embedded", "--out", full}, "slowlab reproduce: --out " + full + ": " + holds},
		{[]string{"reproduce", "slow-client", "--quick", "--stack", "embedded", "--out", file}, "slowlab reproduce: --out " + file + ": not a directory: give a new results directory"},
		{[]string{"assess", "--stack", "embedded", "--probes", "idle", "--out", full}, "slowlab assess: --out " + full + ": " + holds},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/", "--duration", "1s", "--out", file}, "slowlab loadgen: --out " + file + ": not a directory: give a new results directory"},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/", "--duration", "1s", "--out", full}, "slowlab loadgen: --out " + full + ": " + holds},
	} {
		t.Run(strings.Join(tc.args[:2], " ")+" "+filepath.Base(tc.args[len(tc.args)-1]), func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != 2 || strings.TrimRight(stderr, "\n") != tc.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and the one line %q", code, stderr, tc.want)
			}
			entries, _ := os.ReadDir(full)
			if b, err := os.ReadFile(file); len(entries) != 1 || err != nil || string(b) != "kept\n" {
				t.Errorf("written into: %d entries in %s, %s: %v %q", len(entries), full, file, err, b)
			}
		})
	}
}

// TestOutTakesADirectoryWithoutResults: a directory holding files that are
// no session's results passes (buffer-sweep writes each namespace's
// scenario and output log into the directory its session there fills);
// each results file refuses it.
func TestOutTakesADirectoryWithoutResults(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"sweep-scenario.yaml", "session-output.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkOut(dir); err != nil {
		t.Errorf("a directory with no results: %v", err)
	}
	for _, name := range []string{"scenario.yaml", "manifest.json", "environment.json", "requests.csv"} {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkOut(d); err == nil || !strings.Contains(err.Error(), "("+name+")") {
			t.Errorf("a directory holding %s: %v, want it refused naming it", name, err)
		}
	}
}
