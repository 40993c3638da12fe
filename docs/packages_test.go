package docs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPackageTableNamesEveryPackage: CONTRIBUTING.md's package table
// names every package of the module (go list ./...), so a new one says
// what it owns where contributors look.
func TestPackageTableNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no ## Packages section")
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages: the check reads the wrong tree", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "github.com/slowlab/slowlab"), "/")
		if rel == "" {
			continue // the module root holds no package
		}
		if !strings.Contains(table, "`"+rel+"`") {
			t.Errorf("CONTRIBUTING.md's package table does not name %s", rel)
		}
	}
}
