package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestVersionAndHelpCommands(t *testing.T) {
	ctx := context.Background()
	call := func(args ...string) (int, string, string) {
		var out, errw strings.Builder
		code := run(ctx, args, &out, &errw)
		return code, out.String(), errw.String()
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := call(args...)
		if code != 0 || !strings.HasPrefix(out, "slowlab, version "+buildinfo.Version()+"\n") || !strings.Contains(out, "go version:") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	if code, _, errw := call("version", "extra"); code != 2 || !strings.Contains(errw, `unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d, %q", code, errw)
	}
	// slowlab help CMD is that command's help, not the top-level usage.
	for _, name := range []string{"loadgen", "version", "assess"} {
		code, out, _ := call("help", name)
		if code != 0 || !strings.HasPrefix(out, "Usage: slowlab "+name+" ") || strings.Contains(out, "Commands:") {
			t.Errorf("help %s: exit %d\n%s", name, code, out)
		}
	}
	if code, _, errw := call("help", "nosuch"); code != 2 || !strings.Contains(errw, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: exit %d, %q", code, errw)
	}
	if code, out, _ := call("help"); code != 0 || !strings.Contains(out, "Commands:") || !strings.Contains(out, "  version ") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

// TestVersionOfABuild builds slowlab as a release does (-ldflags) and as
// a checkout does (-buildvcs=true), and reads each one's version: the
// release's, and the pseudo-version and revision the go command took
// from git. The go command stamps nothing in a git worktree (.git a
// file), so there the checkout build is of a clone at its committed HEAD.
func TestVersionOfABuild(t *testing.T) {
	slowlabtest.EndToEnd(t, "it builds slowlab twice")
	git := slowlabtest.RequireTool(t, "git")
	root := moduleRoot(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/prometheus/common/version.Version=0.1.0", "-o", release, "./cmd/slowlab")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(release, "version").Output(); err != nil || !strings.HasPrefix(string(out), "slowlab, version 0.1.0\n") {
		t.Errorf("release build: %v\n%s", err, out)
	}

	clone := root
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		clone = filepath.Join(dir, "clone")
		if out, err := exec.Command(git, "clone", "-q", "--no-tags", root, clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
	}
	head, err := exec.Command(git, "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(string(head))
	checkout := filepath.Join(dir, "checkout")
	build = exec.Command("go", "build", "-buildvcs=true", "-o", checkout, "./cmd/slowlab")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	out, err := exec.Command(checkout, "version").Output()
	// A pseudo-version naming the commit (after a tag, vX.Y.(Z+1)-0.DATE-REV),
	// or the tag itself when HEAD is tagged.
	want := regexp.MustCompile(`^slowlab, version (\d+\.\d+\.\d+-(0\.)?\d{14}-` + rev[:12] + `|\d+\.\d+\.\d+)(\+dirty)? \((branch: [^,]+, )?revision: ` + rev + `\)`)
	if err != nil || !want.Match(out) {
		t.Errorf("checkout build at %s: %v, want a pseudo-version naming it or its tag\n%s", rev, err, out)
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// TestVersionPrintsOnlyWhatIsKnown: a build nobody stamped (go test's)
// has no branch, build user or date and an unknown revision; slowlab
// version leaves those out instead of printing "(branch: , revision:
// unknown)" and empty lines.
func TestVersionPrintsOnlyWhatIsKnown(t *testing.T) {
	var out, errw strings.Builder
	if code := run(context.Background(), []string{"version"}, &out, &errw); code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	for _, bad := range []string{"branch: ,", "revision: unknown", "tags:             unknown"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("prints %q:\n%s", bad, out.String())
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), ":") {
			t.Errorf("empty line %q:\n%s", l, out.String())
		}
	}
}
