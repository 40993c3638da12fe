// Package docs holds the project's own documents; its test keeps the
// repository standing on its own.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoOutsideNotes: no tracked file cites the design notes the project
// started from; what users need of them is in docs/experiments.md.
func TestNoOutsideNotes(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	names := []string{"EXPERIMENTS" + ".md", "DESIGN" + ".md", "STYLE" + ".md"}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files, want the whole repository", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		for _, n := range names {
			if i := strings.Index(string(b), n); i >= 0 {
				line := strings.Count(string(b[:i]), "\n") + 1
				t.Errorf("%s:%d cites %s, which is not in the repository (point at docs/experiments.md)", f, line, n)
			}
		}
	}
}
