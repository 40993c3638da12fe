package main

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// `slowlab reproduce --help` lists every experiment with its summary, the
// summaries in one column however long the experiment's name.
func TestReproduceHelpListsExperimentsInColumns(t *testing.T) {
	code, stdout, _ := runCmd(t, "reproduce", "--help")
	if code != 0 {
		t.Fatalf("reproduce --help: exit %d", code)
	}
	col := -1
	for _, e := range lab.Experiments() {
		var line string
		for l := range strings.Lines(stdout) {
			if strings.HasPrefix(l, "  "+e.Name+" ") {
				line = l
			}
		}
		at := strings.Index(line, e.Summary)
		switch {
		case line == "" || at < 0:
			t.Errorf("%s: no line with its name and summary in:\n%s", e.Name, stdout)
		case col < 0:
			col = at
		case at != col:
			t.Errorf("%s: summary at column %d, the others' at %d:\n%s", e.Name, at, col, line)
		}
	}
}
