package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFind reads a fixture tree: the tests whose bodies call the marker
// (through a subtest too, or as Timing in the package that defines it)
// and their packages; not an unmarked test, nor a helper that calls it.
func TestFind(t *testing.T) {
	tests, pkgs, err := find("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"TestMarked", "TestMarkedInASubtest", "TestOther"}; !slices.Equal(tests, want) {
		t.Errorf("tests %v, want %v", tests, want)
	}
	if want := []string{"./a", "./b"}; !slices.Equal(pkgs, want) {
		t.Errorf("packages %v, want %v", pkgs, want)
	}
	if got, want := args(tests, pkgs), "-run ^(TestMarked|TestMarkedInASubtest|TestOther)$ ./a ./b"; got != want {
		t.Errorf("args %q, want %q", got, want)
	}
}

// TestModuleMarksEndToEndTests runs find over the module: every package
// it names is one (go list), and some of the timing-sensitive tests the Makefile used to list by hand are there.
func TestModuleMarksEndToEndTests(t *testing.T) {
	tests, pkgs, err := find("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TestSlowClientShapeReduced", "TestAssessExternalThroughProxy", "TestDirectConservedOnRealSockets", "TestModelErrorEmbedded"} {
		if !slices.Contains(tests, want) {
			t.Errorf("%s not among the %d timing-sensitive tests", want, len(tests))
		}
	}
	cmd := exec.Command("go", append([]string{"list"}, pkgs...)...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v: %s", pkgs, err, out)
	}
	if n := len(strings.Fields(string(out))); n != len(pkgs) {
		t.Errorf("go list: %d packages of %d", n, len(pkgs))
	}
}
