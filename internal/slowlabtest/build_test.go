package slowlabtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildIsShared: two builds of one checkout give one binary, the
// second not linked again (the file is the first's), in a directory named
// for the checkout. (Built with other link flags in between, the binary
// was a new file: what the check sees of a relink.)
func TestBuildIsShared(t *testing.T) {
	EndToEnd(t, "it builds the slowlab binary")
	first, err := build()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := build()
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if first != second || !strings.HasPrefix(filepath.Base(filepath.Dir(first)), BinDirPrefix) {
		t.Errorf("built %s then %s: want one path under %s*", first, second, BinDirPrefix)
	}
	// The go command touches a current binary and links a stale one to
	// a new file it renames into place: the same file is one not linked.
	if !os.SameFile(before, after) {
		t.Errorf("the second build replaced the binary: want it found current")
	}
}
