package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// TestMatrixResumeCutRow: a session killed while writing a request row
// leaves requests.csv's last row cut short; --resume cuts it off, saying
// so, reruns the unfinished run, and no row runs on from the cut one.
func TestMatrixResumeCutRow(t *testing.T) {
	slowlabtest.Timing(t)
	env := &Env{Out: t.TempDir()}
	cfg := &fakeConfig{Header: Header{Experiment: "fake"}, Runs: 2}
	ctx, cancel := context.WithCancel(context.Background())
	m, _ := fakeMatrix(2, func(_ context.Context, s fakeSpec, _ string) string {
		if s == 0 {
			return recorder.RunOK
		}
		cancel()
		return recorder.RunAborted
	})
	if _, err := m.Run(ctx, env, cfg); err == nil {
		t.Fatal("interrupted session: no error")
	}
	path := filepath.Join(env.Out, recorder.FileName[recorder.Request]())
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-len("cond1.rep1,,,0,0,1,0,0,0,0,0,0,200,0,,0,,,0\n")/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var notes []recorder.CutRow
	t.Cleanup(recorder.NoteCutRows(func(c recorder.CutRow) { notes = append(notes, c) }))

	env.Resume, env.Scenario = true, nil
	m, measured := fakeMatrix(2, func(context.Context, fakeSpec, string) string { return recorder.RunOK })
	if _, err := m.Run(context.Background(), env, cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Join(*measured, " ") != "cond1.rep1" {
		t.Errorf("resume measured %v, want the aborted run only", *measured)
	}
	if n := requestRuns(t, env.Out); len(n) != 2 || n["cond0.rep1"] != 2 || n["cond1.rep1"] != 2 {
		t.Errorf("requests per run after resume %v, want 2 each", n)
	}
	if len(notes) != 1 || !notes[0].Removed || notes[0].File != path || notes[0].Line != 5 {
		t.Errorf("notes %+v, want the cut row on line 5 of %s removed", notes, path)
	}
}
