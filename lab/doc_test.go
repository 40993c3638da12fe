package lab_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDocNamesEveryExperimentPackage keeps lab's package doc true: it
// names the package (lab/NAME) of every experiment.
func TestDocNamesEveryExperimentPackage(t *testing.T) {
	pkgs := experimentPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("%d experiment packages found (%v): the search for lab.Register calls no longer sees them", len(pkgs), pkgs)
	}
	if missing := unnamedPackages(labDoc(t), pkgs); len(missing) > 0 {
		t.Errorf("lab's package doc (doc.go) does not name experiment packages %v", missing)
	}
}

// TestDocPackageCheckFails sees the check fail on a doc missing one.
func TestDocPackageCheckFails(t *testing.T) {
	cut := strings.ReplaceAll(labDoc(t), "lab/tempdisk", "")
	if got := unnamedPackages(cut, experimentPackages(t)); !slices.Equal(got, []string{"lab/tempdisk"}) {
		t.Errorf("doc without lab/tempdisk: missing %v, want [lab/tempdisk]", got)
	}
}

// experimentPackages returns the package (lab/NAME) of every experiment:
// each directory below lab whose non-test source calls lab.Register. It
// reads the source rather than the registry, so a new experiment needs no
// import line here to be checked.
func experimentPackages(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, d := range dirs {
		if d.IsDir() && registers(t, d.Name()) {
			pkgs = append(pkgs, "lab/"+d.Name())
		}
	}
	return pkgs
}

// registers reports whether a non-test file in dir calls lab.Register.
func registers(t *testing.T, dir string) bool {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Register" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "lab" {
						found = true
					}
				}
			}
			return !found
		})
	}
	return found
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
