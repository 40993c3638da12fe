package recorder_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// stubRow is a row type declared outside recorder, as an experiment's
// package declares its own.
type stubRow struct {
	RunID string
	Held  recorder.Maybe
	Bytes int64
}

var stubSchema = recorder.NewSchema("stub-rows.csv",
	recorder.Col("run_id", 0, func(r *stubRow) any { return &r.RunID }),
	recorder.Col("held_s", recorder.DecimalsSeconds, func(r *stubRow) any { return &r.Held }),
	recorder.Col("bytes", recorder.DecimalsWhole, func(r *stubRow) any { return &r.Bytes }))

func (stubRow) Schema() *recorder.Schema[stubRow] { return stubSchema }

// TestRowDeclaredOutsideRecorder: a package other than recorder declares
// a results file with NewSchema and Col, and recorder's writer and reader
// take it: its header, its rows (seconds to the millisecond, an empty
// Maybe) back as written.
func TestRowDeclaredOutsideRecorder(t *testing.T) {
	dir := t.TempDir()
	w, err := recorder.CreateFile[stubRow](dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := []stubRow{{RunID: "a.rep1", Held: recorder.Some(1.23456), Bytes: 7}, {RunID: "b.rep1", Bytes: 1 << 40}}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "stub-rows.csv"))
	if want := "run_id,held_s,bytes\na.rep1,1.235,7\nb.rep1,,1099511627776\n"; string(b) != want {
		t.Errorf("stub-rows.csv:\n%s\nwant:\n%s", b, want)
	}
	got, err := recorder.ReadFile[stubRow](filepath.Join(dir, recorder.FileName[stubRow]()))
	if err != nil || len(got) != 2 || got[0].Held != recorder.Some(1.235) || got[1].Held.Valid || got[1].Bytes != 1<<40 {
		t.Errorf("read back %+v, %v", got, err)
	}
	if h := strings.Join(recorder.Header[stubRow](), ","); h != "run_id,held_s,bytes" {
		t.Errorf("header %s", h)
	}
}
