package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a markdown link's target: [text](target); code is an inline
// code span or a fenced block, whose text is no link.
var (
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code   = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
)

// brokenLinks returns the relative link targets of the markdown text of
// file (a path from the repository root) that name no file or directory
// under root.
func brokenLinks(root, file, text string) []string {
	var broken []string
	for _, m := range mdLink.FindAllStringSubmatch(code.ReplaceAllString(text, ""), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		if _, err := os.Stat(filepath.Join(root, filepath.Dir(file), target)); err != nil {
			broken = append(broken, m[1])
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
		links += len(mdLink.FindAllString(string(b), -1))
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
