package slowlabtest

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TinyDisk mounts a tmpfs of size bytes (root) for the rest of the test
// and returns its directory: a real filesystem that runs out of space.
func TinyDisk(t testing.TB, size int) string {
	t.Helper()
	RequireRoot(t, "mounting a tmpfs that fills up")
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
