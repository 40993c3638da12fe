package workdir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNew: a directory under the temp dir named Prefix, this PID, "-";
// two are two.
func TestNew(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(a)
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(b)
	want := filepath.Join(os.TempDir(), Prefix+strconv.Itoa(os.Getpid())+"-")
	for _, d := range []string{a, b} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || !strings.HasPrefix(d, want) {
			t.Errorf("%s (%v): want a directory %s*", d, err, want)
		}
	}
	if a == b {
		t.Errorf("two work dirs are one: %s", a)
	}
}
