package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// openRunFiles creates the four files with their headers; Close closes
// them once and says the same on a second call.
func TestRunFiles(t *testing.T) {
	dir := t.TempDir()
	f, err := openRunFiles[recorder.LargeResponse, recorder.Run](dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Runs.Write(recorder.Run{RunID: "r1", Status: recorder.RunOK}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, recorder.FileName[recorder.Run]()))
	if err != nil || len(runs) != 1 || runs[0].RunID != "r1" {
		t.Errorf("runs %v, %v; want r1", runs, err)
	}
	for _, name := range []string{recorder.FileName[recorder.LargeResponse](), recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v; want it with its header", name, err)
		}
	}
	notDir := filepath.Join(dir, recorder.FileName[recorder.LargeResponse]())
	if _, err := openRunFiles[recorder.LargeResponse, recorder.Run](notDir, false); err == nil {
		t.Errorf("opened files under %s, a file", notDir)
	}
}
