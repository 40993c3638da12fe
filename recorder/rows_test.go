package recorder_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// Every row type of recorder has its tests here: a round-trip property,
// the coverage of its fields by its columns, and a fuzz target.
// TestEveryRowTypeIsTested fails until a new row type, here or in an
// experiment's package, is added to its package's.

// TestRoundTrip is the property test: rows whose values lie on each
// column's grid read back exactly as written, for every row type.
func TestRoundTrip(t *testing.T) {
	t.Run("requests", recordertest.RoundTrip[recorder.Request])
	t.Run("large-responses", recordertest.RoundTrip[recorder.LargeResponse])
	t.Run("resource-samples", recordertest.RoundTrip[recorder.ResourceSample])
	t.Run("runs", recordertest.RoundTrip[recorder.Run])
	t.Run("conditions", recordertest.RoundTrip[recorder.Condition])
	t.Run("hops", recordertest.RoundTrip[recorder.Hop])
}

// TestColumnsCoverEveryField: every field of every row struct has exactly
// one column.
func TestColumnsCoverEveryField(t *testing.T) {
	recordertest.Coverage[recorder.Request](t)
	recordertest.Coverage[recorder.LargeResponse](t)
	recordertest.Coverage[recorder.ResourceSample](t)
	recordertest.Coverage[recorder.Run](t)
	recordertest.Coverage[recorder.Condition](t)
	recordertest.Coverage[recorder.Hop](t)
}

func FuzzReadRequests(f *testing.F)        { recordertest.FuzzRead[recorder.Request](f) }
func FuzzReadLargeResponses(f *testing.F)  { recordertest.FuzzRead[recorder.LargeResponse](f) }
func FuzzReadResourceSamples(f *testing.F) { recordertest.FuzzRead[recorder.ResourceSample](f) }
func FuzzReadRuns(f *testing.F)            { recordertest.FuzzRead[recorder.Run](f) }
func FuzzReadConditions(f *testing.F)      { recordertest.FuzzRead[recorder.Condition](f) }
func FuzzReadHops(f *testing.F)            { recordertest.FuzzRead[recorder.Hop](f) }

// TestEveryRowTypeIsTested reads the module's source: every type with a
// Schema method (a row type), in recorder or in the package that declares
// it, must have its package's tests instantiate recordertest's RoundTrip
// (or Contract), Coverage (or Contract) and FuzzRead with it.
func TestEveryRowTypeIsTested(t *testing.T) {
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); path != ".." && (strings.HasPrefix(n, ".") || n == "testdata") {
			return filepath.SkipDir
		}
		rows, tested := rowTypesIn(t, path)
		found += len(rows)
		for _, typ := range rows {
			for _, want := range [][]string{{"RoundTrip", "Contract"}, {"Coverage", "Contract"}, {"FuzzRead"}} {
				if !slices.ContainsFunc(want, func(fn string) bool { return tested[fn][typ] }) {
					t.Errorf("%s: row type %s is not tested with recordertest.%s", path, typ, strings.Join(want, " or "))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found %d row types: the search for Schema methods is broken", found)
	}
}

// rowTypesIn parses dir's Go files: the row types its non-test files
// declare (types with a Schema method), and for each function of
// recordertest its tests call, the types it is instantiated with.
func rowTypesIn(t *testing.T, dir string) (rows []string, tested map[string]map[string]bool) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	tested = map[string]map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		test := strings.HasSuffix(name, "_test.go")
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if !test && fd.Recv != nil && fd.Name.Name == "Schema" {
				rows = append(rows, receiverName(fd.Recv.List[0].Type))
			}
		}
		if !test {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ix, ok := n.(*ast.IndexExpr)
			if !ok {
				return true
			}
			fn, ok := ix.X.(*ast.SelectorExpr)
			if !ok || fmt.Sprint(fn.X) != "recordertest" {
				return true
			}
			var typ string
			switch e := ix.Index.(type) {
			case *ast.SelectorExpr:
				typ = e.Sel.Name
			case *ast.Ident:
				typ = e.Name
			}
			if tested[fn.Sel.Name] == nil {
				tested[fn.Sel.Name] = map[string]bool{}
			}
			tested[fn.Sel.Name][typ] = true
			return true
		})
	}
	return rows, tested
}

func receiverName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
