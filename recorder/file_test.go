package recorder_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

func TestCreateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results", "slow-client-20250301T120000Z")
	w, err := recorder.CreateFile[recorder.LargeResponse](dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "large-responses.csv")
	if w.Name() != path {
		t.Errorf("Name = %q, want %q", w.Name(), path)
	}
	rows := []recorder.LargeResponse{
		{RunID: "r1", Client: 0, Status: 200, Bytes: 16 << 20, ReceiveS: 8.127, AppSendS: recorder.Some(7.981), Complete: true},
		{RunID: "r1", Client: 1, Error: "unexpected EOF"},
	}
	for i, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		// Each row is in the file before Close: a crash loses nothing.
		got, err := recorder.ReadFile[recorder.LargeResponse](path)
		if err != nil {
			t.Fatal(err)
		}
		if d := recordertest.DiffRows(rows[:i+1], got, 0); d != "" {
			t.Fatalf("after row %d: %s", i, d)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("second Close succeeded")
	}

	// The file holds measurements: CreateFile must not truncate it.
	if _, err := recorder.CreateFile[recorder.LargeResponse](dir); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateFile on an existing file: error = %v, want fs.ErrExist", err)
	}
	got, err := recorder.ReadFile[recorder.LargeResponse](path)
	if err != nil {
		t.Fatal(err)
	}
	if d := recordertest.DiffRows(rows, got, 0); d != "" {
		t.Error(d)
	}
}

func TestCreateFileBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := recorder.CreateFile[recorder.Run](file)
	if err == nil || !strings.Contains(err.Error(), "create "+filepath.Join(file, "runs.csv")) {
		t.Fatalf("error = %v, want it to name the path", err)
	}
}

// Appending after KeepRuns (a resume): the kept runs' rows, then the new
// ones, in a file as readable as a created one.
func TestAppendAfterKeepRuns(t *testing.T) {
	dir := t.TempDir()
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "a"} {
		if err := w.Write(recorder.Request{RunID: id, Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recorder.KeepRuns(dir, recorder.FileName[recorder.Request](), func(id string) bool { return id == "a" }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "requests.csv")); err != nil {
		t.Fatal(err)
	} else if st.Mode().Perm() != 0o644 {
		t.Errorf("rewritten requests.csv has mode %v, want 0644 like a created one", st.Mode().Perm())
	}
	aw, err := recorder.AppendFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := aw.Write(recorder.Request{RunID: "c", Status: 204}); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.RunID)
	}
	if strings.Join(ids, ",") != "a,a,c" {
		t.Errorf("rows after rewrite and append: %v, want a,a,c", ids)
	}
	// A file with a bad complete row is not appended to (a cut last row
	// is cut off first: TestAppendCutLastRow).
	path := filepath.Join(dir, "requests.csv")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append(b[:len(b)-3:len(b)-3], '\n'), 0o644)
	if _, err := recorder.AppendFile[recorder.Request](dir); err == nil || !strings.Contains(err.Error(), "wrong number of fields") {
		t.Errorf("append to a file with a short row: %v", err)
	}
}
