// Command stresstests prints the arguments of the go test run that
// `make stress` repeats: -run with a pattern naming every test that marks
// itself timing-sensitive (its body calls slowlabtest.Timing), and the
// packages that hold them. It reads the module's _test.go files under the
// directory it is given (default .), so a new test joins make stress by
// its own first line, with no list to edit.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// marker is the call that marks a test timing-sensitive.
const marker = "Timing"

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	tests, pkgs, err := find(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stresstests:", err)
		os.Exit(1)
	}
	if len(tests) == 0 {
		fmt.Fprintf(os.Stderr, "stresstests: no test under %s calls slowlabtest.%s\n", root, marker)
		os.Exit(1)
	}
	fmt.Println(args(tests, pkgs))
}

// args is the go test arguments that run tests in pkgs.
func args(tests, pkgs []string) string {
	return "-run ^(" + strings.Join(tests, "|") + ")$ " + strings.Join(pkgs, " ")
}

var testName = regexp.MustCompile(`^(Test|Fuzz)([^a-z].*)?$`)

// find returns the sorted names of the top-level tests under root whose
// body calls slowlabtest.Timing (or Timing, in package slowlabtest), and
// the sorted packages (./dir) that hold them. testdata and hidden
// directories are skipped, as the go command does.
func find(root string) (tests, pkgs []string, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !testName.MatchString(fn.Name.Name) || !marks(fn.Body) {
				continue
			}
			tests = append(tests, fn.Name.Name)
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(tests)
	slices.Sort(pkgs)
	return slices.Compact(tests), slices.Compact(pkgs), err
}

// marks says whether body calls slowlabtest.Timing or Timing.
func marks(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		switch f := call.Fun.(type) {
		case *ast.SelectorExpr:
			if x, ok := f.X.(*ast.Ident); ok && x.Name == "slowlabtest" && f.Sel.Name == marker {
				found = true
			}
		case *ast.Ident:
			if f.Name == marker {
				found = true
			}
		}
		return !found
	})
	return found
}
