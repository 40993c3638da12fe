package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/mdlink"
)

// brokenLinks returns the relative link targets of the markdown text of
// file (a path from the repository root) that name no file or directory
// under root.
func brokenLinks(root, file, text string) []string {
	var broken []string
	for _, l := range mdlink.Relative(text) {
		if _, err := os.Stat(filepath.Join(root, filepath.Dir(file), l.Path)); err != nil {
			broken = append(broken, l.Target)
		}
	}
	return broken
}

// TestLinksResolve: every relative link of every tracked markdown file
// names a file or directory of the repository (the README's links to the
// experiments' pages under docs/, theirs back to the exporter's README).
func TestLinksResolve(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 10 {
		t.Fatalf("git ls-files listed %d markdown files, want the README and docs/", len(files))
	}
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		links += len(mdlink.Relative(string(b)))
		for _, l := range brokenLinks("..", f, string(b)) {
			t.Errorf("%s: link %q names nothing in the repository", f, l)
		}
	}
	if links < 20 {
		t.Errorf("%d links in %d markdown files: want the README's links to docs/", links, len(files))
	}
}

// TestBrokenLinkFound: a link to a page that is not there, or one that
// misses the ../ of a page under docs/, is found.
func TestBrokenLinkFound(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"docs", "exporter"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "exporter", "README.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := "[ok](../exporter/README.md) [web](https://example.invalid/x) [here](#a) [bad](exporter/README.md) [gone](sse.md) `re[a](b)`"
	got := brokenLinks(root, "docs/page.md", text)
	if strings.Join(got, " ") != "exporter/README.md sse.md" {
		t.Errorf("broken links %q, want exporter/README.md and sse.md", got)
	}
}
