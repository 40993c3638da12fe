package slowlabtest

import (
	"os"
	"path/filepath"
	"testing"
)

// SeedFiles adds to f's corpus the content of every file under testdata
// whose base name matches one of the patterns (filepath.Match syntax).
func SeedFiles(f *testing.F, patterns ...string) {
	f.Helper()
	err := filepath.Walk("testdata", func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		for _, pat := range patterns {
			if matched, _ := filepath.Match(pat, fi.Name()); matched {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				f.Add(string(data))
			}
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
}

// PublicTestBinary copies the running test binary into a fresh directory
// that every user can enter and returns the copy's path and the
// directory (mode dirMode), so a test running as root can rerun itself as
// an unprivileged user: t.TempDir and the go build cache are private.
func PublicTestBinary(t testing.TB, dirMode os.FileMode) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil { // t.TempDir's parent is private too
		t.Fatal(err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, filepath.Base(exe))
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}
