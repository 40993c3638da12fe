package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citedTest is a test named in prose: TestName, TestName/subtest (as
// go test -run names a subtest) or TestPrefix* (every test so named).
// testFunc is a top-level test function of a _test.go file.
var (
	citedTest = regexp.MustCompile("\\bTest[A-Z][A-Za-z0-9_]*(?:\\*|/[^\\s`),;]+)?")
	testFunc  = regexp.MustCompile(`(?m)^func (Test[A-Z][A-Za-z0-9_]*)\(`)
)

// testFuncs maps each test function of the tracked and untracked (not
// ignored) _test.go files under root to its file's text.
func testFuncs(t *testing.T, root string) map[string]string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*_test.go").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	funcs := map[string]string{}
	for _, f := range strings.Fields(string(out)) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			funcs[m[1]] = string(b)
		}
	}
	return funcs
}

// missingTests returns the tests text cites that funcs does not have: a
// name no test function has, a prefix* no test function starts with, or
// a subtest whose name is not written in its test's file.
func missingTests(text string, funcs map[string]string) []string {
	var missing []string
	for _, cited := range citedTest.FindAllString(text, -1) {
		if prefix, ok := strings.CutSuffix(cited, "*"); ok {
			found := false
			for name := range funcs {
				found = found || strings.HasPrefix(name, prefix)
			}
			if !found {
				missing = append(missing, cited)
			}
			continue
		}
		name, sub, _ := strings.Cut(cited, "/")
		src, ok := funcs[name]
		if !ok || (sub != "" && !strings.Contains(src, `"`+sub+`"`)) {
			missing = append(missing, cited)
		}
	}
	return missing
}

// TestCitedTestsExist: every test a tracked markdown file names (the
// docs' "TestShapeReal asserts ...") is a test function of the
// repository, so a claim that a test asserts something names one that
// can be run.
func TestCitedTestsExist(t *testing.T) {
	funcs := testFuncs(t, "..")
	if len(funcs) < 100 {
		t.Fatalf("%d test functions found, want the whole repository's", len(funcs))
	}
	out, err := exec.Command("git", "-C", "..", "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	cited := 0
	for _, f := range strings.Fields(string(out)) {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		cited += len(citedTest.FindAllString(string(b), -1))
		for _, m := range missingTests(string(b), funcs) {
			t.Errorf("%s cites %s: no such test in the repository's _test.go files", f, m)
		}
	}
	if cited < 10 {
		t.Errorf("%d tests cited in the markdown files, want the docs' (more than 10)", cited)
	}
}

// TestCitedTestMissingFound feeds missingTests a doc that cites a test
// that does not exist, a prefix no test has, a subtest its test does not
// name and, beside them, tests that exist.
func TestCitedTestMissingFound(t *testing.T) {
	funcs := map[string]string{
		"TestShapeReal":          "func TestShapeReal(t *testing.T) {}",
		"TestBothTimeoutsReal":   "func TestBothTimeoutsReal(t *testing.T) {}",
		"TestAppsServeWebSocket": `func TestAppsServeWebSocket(t *testing.T) { for _, s := range []string{"node+embedded"} { t.Run(s, nil) } }`,
	}
	doc := "`TestShapeReal` asserts four sockets; `TestShapeThousand` asserts 1,000; TestBothTimeouts* on both stacks; " +
		"TestNoneSuch* too; `TestAppsServeWebSocket/node+embedded` and `TestAppsServeWebSocket/gunicorn+embedded`."
	got := missingTests(doc, funcs)
	want := []string{"TestShapeThousand", "TestNoneSuch*", "TestAppsServeWebSocket/gunicorn+embedded"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("missing %q, want %q", got, want)
	}
}
