package recorder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepRuns refuses a file without a run_id column and leaves it as
// it was; a missing file stays missing. (What it keeps:
// TestAppendAfterKeepRuns.)
func TestKeepRuns(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "other.csv")
	os.WriteFile(bad, []byte("id,x\n1,2\n"), 0o644)
	if err := KeepRuns(dir, "other.csv", func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "no run_id column") {
		t.Errorf("file without run_id: %v", err)
	}
	if b, _ := os.ReadFile(bad); string(b) != "id,x\n1,2\n" {
		t.Errorf("refused file changed to %q", b)
	}
	if err := KeepRuns(dir, "missing.csv", func(string) bool { return true }); err != nil {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.csv")); !os.IsNotExist(err) {
		t.Error("KeepRuns created a missing file")
	}
}
