package main

import (
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// TestDocNamesEveryCommandAndExperiment keeps the command's doc true: it
// names every registered subcommand (as "NAME (") and every experiment in
// lab's registry, so neither can be added without the doc saying so.
func TestDocNamesEveryCommandAndExperiment(t *testing.T) {
	doc := commandDoc(t)
	if len(commands) < 10 || len(lab.Experiments()) < 10 {
		t.Fatalf("%d subcommands, %d experiments registered: registration changed", len(commands), len(lab.Experiments()))
	}
	if cmds, exps := undocumented(doc); len(cmds) > 0 || len(exps) > 0 {
		t.Errorf("cmd/slowlab's package doc (main.go) does not name subcommands %v, experiments %v", cmds, exps)
	}
}

// TestDocCheckFails sees the check fail on a doc missing one of each.
func TestDocCheckFails(t *testing.T) {
	doc := commandDoc(t)
	cut := strings.ReplaceAll(strings.ReplaceAll(doc, "temp-disk-full", ""), "probe-loop (", "")
	cmds, exps := undocumented(cut)
	if !slices.Equal(cmds, []string{"probe-loop"}) || !slices.Equal(exps, []string{"temp-disk-full"}) {
		t.Errorf("doc without probe-loop and temp-disk-full: missing %v, %v; want [probe-loop], [temp-disk-full]", cmds, exps)
	}
}

// undocumented returns the subcommands and experiments doc does not name.
func undocumented(doc string) (cmds, exps []string) {
	for _, n := range commandNames() {
		if !namesWord(doc, n+" (") {
			cmds = append(cmds, n)
		}
	}
	for _, n := range lab.Names() {
		if !namesWord(doc, n) {
			exps = append(exps, n)
		}
	}
	return cmds, exps
}

// namesWord reports whether s occurs in doc not as the tail or head of a
// longer name ("run" does not count inside "stalled-run" or "runs").
func namesWord(doc, s string) bool {
	const nameChars = "abcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; ; {
		j := strings.Index(doc[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		before := start == 0 || !strings.ContainsRune(nameChars, rune(doc[start-1]))
		after := end == len(doc) || strings.HasSuffix(s, "(") || !strings.ContainsRune(nameChars, rune(doc[end]))
		if before && after {
			return true
		}
		i = start + 1
	}
}

// commandDoc returns the package comment of main.go.
func commandDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("main.go has no package doc")
	}
	return f.Doc.Text()
}
