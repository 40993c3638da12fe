package lab_test

import (
	"go/parser"
	"go/token"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/buffersweep"
	_ "github.com/slowlab/slowlab/lab/idleconn"
	_ "github.com/slowlab/slowlab/lab/latencygap"
	_ "github.com/slowlab/slowlab/lab/longpoll"
	_ "github.com/slowlab/slowlab/lab/slowclient"
	_ "github.com/slowlab/slowlab/lab/slowupload"
	_ "github.com/slowlab/slowlab/lab/sse"
	_ "github.com/slowlab/slowlab/lab/stalledreader"
	_ "github.com/slowlab/slowlab/lab/tempcliff"
	_ "github.com/slowlab/slowlab/lab/tempdisk"
)

// TestDocNamesEveryExperimentPackage keeps lab's package doc true: it
// names the package (lab/NAME) of every registered experiment.
func TestDocNamesEveryExperimentPackage(t *testing.T) {
	pkgs := experimentPackages()
	if len(pkgs) < 10 {
		t.Fatalf("%d experiment packages registered (%v): registration changed", len(pkgs), pkgs)
	}
	if missing := unnamedPackages(labDoc(t), pkgs); len(missing) > 0 {
		t.Errorf("lab's package doc (doc.go) does not name experiment packages %v", missing)
	}
}

// TestDocPackageCheckFails sees the check fail on a doc missing one.
func TestDocPackageCheckFails(t *testing.T) {
	cut := strings.ReplaceAll(labDoc(t), "lab/tempdisk", "")
	if got := unnamedPackages(cut, experimentPackages()); !slices.Equal(got, []string{"lab/tempdisk"}) {
		t.Errorf("doc without lab/tempdisk: missing %v, want [lab/tempdisk]", got)
	}
}

// experimentPackages returns each registered experiment's package path
// below the module, such as lab/slowclient: the package its New function
// is declared in, the one that registered it (temp-disk-full's Config is
// temp-cliff's type, so the Config's type would not tell).
func experimentPackages() []string {
	var pkgs []string
	for _, e := range lab.Experiments() {
		fn := runtime.FuncForPC(reflect.ValueOf(e.New).Pointer()).Name() // .../lab/tempdisk.init.0.func1
		slash := strings.LastIndex(fn, "/")
		path := fn[:slash+strings.Index(fn[slash:], ".")]
		pkgs = append(pkgs, path[strings.Index(path, "/lab/")+1:])
	}
	return pkgs
}

// unnamedPackages returns the packages doc does not name as a whole word.
func unnamedPackages(doc string, pkgs []string) []string {
	var missing []string
	for _, p := range pkgs {
		named := false
		for _, w := range strings.FieldsFunc(doc, func(r rune) bool { return strings.ContainsRune(" \n\t,;:()`", r) }) {
			if strings.TrimSuffix(w, ".") == p {
				named = true
			}
		}
		if !named {
			missing = append(missing, p)
		}
	}
	return missing
}

// labDoc returns lab's package comment (doc.go).
func labDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package doc")
	}
	return f.Doc.Text()
}
