package recorder_test

import (
	"fmt"
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

// grownRow is a layout that gained a column, proto, after files were
// written without it (Column.Added).
type grownRow struct {
	RunID, Proto string
	Bytes        int64
}

var grownSchema = recorder.NewSchema("grown-rows.csv",
	recorder.Col("run_id", 0, func(r *grownRow) any { return &r.RunID }),
	recorder.Col("proto", 0, func(r *grownRow) any { return &r.Proto }).Added("h2"),
	recorder.Col("bytes", recorder.DecimalsWhole, func(r *grownRow) any { return &r.Bytes }))

func (grownRow) Schema() *recorder.Schema[grownRow] { return grownSchema }

// TestAddedColumn: a file written before a column was added reads it as
// its default, a file with it reads its cells; a missing column that was
// not added, a misplaced added one or one more column are refused by name.
func TestAddedColumn(t *testing.T) {
	for _, tc := range []struct{ csv, want string }{
		{"run_id,bytes\na,7\n", "[{a h2 7}]"},
		{"run_id,proto,bytes\na,h3,7\n", "[{a h3 7}]"},
		{"run_id,proto\na,h3\n", `grown-rows.csv: header has 2 columns, want 3: column 3 "bytes" is missing`},
		{"run_id,bytes,proto\na,7,h3\n", `grown-rows.csv: header has 3 columns, want 3: unexpected column 3 "proto"`},
		{"proto,run_id,bytes\nh3,a,7\n", `grown-rows.csv: header column 1: want "run_id", got "proto"`},
		{"run_id,bytes\na,x\n", `grown-rows.csv line 2, column 2 (bytes)`},
		{"run_id,bytes\na,7,h3\n", "wrong number of fields: got 3 columns, want 2"},
	} {
		rows, err := recorder.ReadAll[grownRow](strings.NewReader(tc.csv))
		got := fmt.Sprint(rows)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q: got %s, want %s", tc.csv, got, tc.want)
		}
	}
}
