package recorder

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDocNamesEveryResultsFile keeps the package doc true: every results
// file a row type declares (its schema's file) is named in doc.go, so a
// new results file cannot be added without being listed there.
func TestDocNamesEveryResultsFile(t *testing.T) {
	doc := packageDoc(t, ".")
	files := schemaFiles(t, ".")
	if !slices.Contains(files, "requests.csv") || !slices.Contains(files, "resource-samples.csv") {
		t.Fatalf("found schema files %v, not requests.csv and resource-samples.csv: the search for Schema[T]{file: ...} and Tagged[T](...) no longer sees them", files)
	}
	if missing := unnamed(doc, files); len(missing) > 0 {
		t.Errorf("recorder's package doc (doc.go) does not name results files %v", missing)
	}
}

// TestDocCheckFails sees the check fail: a doc without one of the files.
func TestDocCheckFails(t *testing.T) {
	doc := packageDoc(t, ".")
	files := schemaFiles(t, ".")
	cut := strings.ReplaceAll(doc, "resource-samples.csv", "")
	if got := unnamed(cut, files); !slices.Equal(got, []string{"resource-samples.csv"}) {
		t.Errorf("doc without resource-samples.csv: missing %v, want [resource-samples.csv]", got)
	}
}

// unnamed returns the files that doc does not name as a whole word.
func unnamed(doc string, files []string) []string {
	var missing []string
	for _, f := range files {
		named := false
		for rest := doc; ; {
			i := strings.Index(rest, f)
			if i < 0 {
				break
			}
			// "runs.csv" must not count as named inside "idle-runs.csv".
			if i == 0 || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-_", rune(rest[i-1])) {
				named = true
				break
			}
			rest = rest[i+len(f):]
		}
		if !named {
			missing = append(missing, f)
		}
	}
	return missing
}

// packageDoc returns the text of the package comment of the package in dir.
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	var doc strings.Builder
	for _, path := range goFiles(t, dir) {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc.WriteString(f.Doc.Text())
		}
	}
	if doc.Len() == 0 {
		t.Fatalf("no package doc in %s", dir)
	}
	return doc.String()
}

// schemaFiles returns the file names of every Schema[T]{file: "..."} and
// Tagged[T]("...") in the non-test files of dir, sorted.
func schemaFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, path := range goFiles(t, dir) {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		add := func(e ast.Expr) {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				name, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && key.Name == "file" {
					add(n.Value)
				}
			case *ast.CallExpr:
				if ix, ok := n.Fun.(*ast.IndexExpr); ok && len(n.Args) == 1 {
					if id, ok := ix.X.(*ast.Ident); ok && id.Name == "Tagged" {
						add(n.Args[0])
					}
				}
			}
			return true
		})
	}
	slices.Sort(files)
	return files
}

// goFiles lists dir's non-test Go files.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			paths = append(paths, filepath.Join(dir, n))
		}
	}
	return paths
}
