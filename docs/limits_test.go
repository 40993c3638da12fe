package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The project's size rules for non-test Go files (CONTRIBUTING.md says them).
const (
	maxFileLines = 400
	maxFuncLines = 80 // from the func line to its closing brace, exclusive
)

// TestSizeLimits: no tracked non-test Go file is over maxFileLines lines,
// and no function in one over maxFuncLines; split by responsibility
// rather than raise them.
func TestSizeLimits(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d Go files, want the whole repository", len(files))
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		for _, v := range oversized(f, src) {
			t.Error(v)
		}
	}
}

// TestSizeLimitsFail sees both rules fail on a file made too long by one
// function too long.
func TestSizeLimitsFail(t *testing.T) {
	var b strings.Builder
	b.WriteString("package x\n\nfunc short() {}\n\nfunc long() {\n")
	for range maxFuncLines {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n")
	for strings.Count(b.String(), "\n") <= maxFileLines {
		b.WriteString("\n")
	}
	got := oversized("x.go", []byte(b.String()))
	want := []string{
		fmt.Sprintf("x.go: %d lines, over %d", maxFileLines+1, maxFileLines),
		fmt.Sprintf("x.go:5: func long is %d lines, over %d", maxFuncLines+1, maxFuncLines),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("oversized = %q, want %q", got, want)
	}
	// One line less of each passes.
	ok := "package x\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines-1) + "}\n"
	if got := oversized("x.go", []byte(ok)); len(got) > 0 {
		t.Errorf("a %d-line function: %q, want none", maxFuncLines, got)
	}
}

// oversized returns what in the Go source src of file breaks the rules.
func oversized(file string, src []byte) []string {
	var out []string
	if n := strings.Count(string(src), "\n"); n > maxFileLines {
		out = append(out, fmt.Sprintf("%s: %d lines, over %d", file, n, maxFileLines))
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return append(out, fmt.Sprintf("%s: %v", file, err))
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		if end-start > maxFuncLines {
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) > 0 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
			out = append(out, fmt.Sprintf("%s:%d: func %s is %d lines, over %d", file, start, name, end-start, maxFuncLines))
		}
	}
	return out
}

// recvName is a method receiver's type name, without pointer or type
// parameters.
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
