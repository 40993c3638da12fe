package recorder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepRuns keeps the rows of the runs it is told to, with the header,
// in any results file with a run_id column, streaming; a file without one
// is refused and left as it was; a missing file stays missing.
func TestKeepRuns(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateFile[Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"a.rep1", "b.rep1", "a.rep1", "c.rep1"} {
		if err := w.Write(Request{RunID: id, Seq: i, Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	keep := map[string]bool{"a.rep1": true, "c.rep1": true}
	if err := KeepRuns(dir, FileName[Request](), func(id string) bool { return keep[id] }); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadFile[Request](filepath.Join(dir, FileName[Request]()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.RunID)
	}
	if strings.Join(got, " ") != "a.rep1 a.rep1 c.rep1" {
		t.Errorf("kept %v, want a.rep1 twice and c.rep1", got)
	}

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
