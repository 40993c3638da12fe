package experiments

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// TestEveryExperimentIsImported: every package under lab/ whose code
// calls lab.Register is imported here, and the registry holds one
// experiment for each.
func TestEveryExperimentIsImported(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "experiments.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var imported []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		imported = append(imported, strings.TrimPrefix(p, "github.com/slowlab/slowlab/lab/"))
	}
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	var registering []string
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join("..", d.Name(), "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "lab.Register(") {
				registering = append(registering, d.Name())
				break
			}
		}
	}
	if len(registering) == 0 {
		t.Fatal("no package under lab/ calls lab.Register: the check reads the wrong tree")
	}
	for _, p := range registering {
		if !slices.Contains(imported, p) {
			t.Errorf("lab/%s registers an experiment but experiments.go does not import it", p)
		}
	}
	if n := len(lab.Experiments()); n != len(registering) {
		t.Errorf("%d experiments registered, %d packages register one", n, len(registering))
	}
}
