package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestExternalSelectorSelectsNothing: `stack: external` with a selector
// that selects nothing is refused as docs/commands.md says: exit 2 (the
// scenario names processes that are not running: bad input), one line
// naming the selector, before anything starts (no results directory).
func TestExternalSelectorSelectsNothing(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "external.yml")
	if err := os.WriteFile(scenario, []byte(`experiment: slow-client
stack: external
external:
  fast_url: http://127.0.0.1:1/fast
  large_url: http://127.0.0.1:1/large
  route: direct
  server: sync-2
  groups:
    app: ["comm:^no-such-process-of-slowlab$"]
conditions:
  - {route: direct, server: sync-2, slow_clients: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	code, _, stderr := runCmd(t, "run", scenario, "--out", out)
	want := `slowlab run: external.groups.app: selector "comm:^no-such-process-of-slowlab$" selects nothing now: no process`
	if code != 2 || stderr != want+"\n" {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and the one line %q", code, stderr, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want no results directory", out, err)
	}
	doc, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`a selector that selects nothing[^.]*refused before anything starts \(exit 2`).Match(regexp.MustCompile(`\s+`).ReplaceAll(doc, []byte(" "))) {
		t.Error("docs/commands.md does not say a selector that selects nothing is refused with exit 2")
	}
}
