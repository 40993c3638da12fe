package recorder_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// cutRows are requests whose last row has multi-byte runes and a quoted
// newline in its last column, so cuts land inside both.
var cutRows = []recorder.Request{
	{RunID: "r1", Route: "direct", Server: "sync-2", Rep: 1, Seq: 0, StartS: 0.25, LatencyMS: 1.5, Status: 200, Bytes: 12},
	{RunID: "r1", Route: "direct", Server: "sync-2", Rep: 1, Seq: 1, StartS: 0.5, LatencyMS: 2.25, Status: 0,
		Error: "ünïcödé ✓ \"say\"\nline two"},
}

// collectCuts notes cut rows into the returned slice for the test's length.
func collectCuts(t *testing.T) *[]recorder.CutRow {
	var got []recorder.CutRow
	t.Cleanup(recorder.NoteCutRows(func(c recorder.CutRow) { got = append(got, c) }))
	return &got
}

// TestReadCutLastRow cuts a file at every byte of its last row, as a
// killed writer can: every cut reads without error, with every complete
// row; every cut, one that parses included (only the newline cut, or a
// last value cut short), is left out and noted once, naming the file and
// line.
func TestReadCutLastRow(t *testing.T) {
	full := writeRows(t, cutRows)
	last := len(writeRows(t, cutRows[:1])) // where the last row starts
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.csv")
	left, kept := 0, 0
	for n := last; n < len(full); n++ {
		notes := collectCuts(t)
		if err := os.WriteFile(path, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		for range 2 { // noted once, however often it is read
			got, err := recorder.ReadFile[recorder.Request](path)
			if err != nil {
				t.Fatalf("cut at byte %d (%q): %v", n, full[last:n], err)
			}
			if d := recordertest.DiffRows(cutRows[:1], got[:min(1, len(got))], 0); d != "" || len(got) == 0 {
				t.Fatalf("cut at byte %d: first row: %s (%d rows)", n, d, len(got))
			}
			if len(got) == 2 && recordertest.DiffRows(cutRows, got, 0) != "" {
				t.Fatalf("cut at byte %d: kept a last row that differs: %s", n, recordertest.DiffRows(cutRows, got, 0))
			}
		}
		got, _ := recorder.ReadFile[recorder.Request](path)
		switch {
		case len(got) == 1 && n > last:
			left++
			if len(*notes) != 1 {
				t.Fatalf("cut at byte %d: %d notes, want 1: %v", n, len(*notes), *notes)
			}
			c := (*notes)[0]
			if c.File != path || c.Line != 3 || c.Offset != int64(last) || c.Removed {
				t.Errorf("cut at byte %d: noted %+v, want %s line 3 at offset %d", n, c, path, last)
			}
			if s := c.String(); !strings.HasPrefix(s, path+": its last row (line 3) was cut short (the session was killed?); left out") {
				t.Errorf("note %q", s)
			}
		case len(*notes) != 0:
			t.Fatalf("cut at byte %d: %d rows and notes %v", n, len(got), *notes)
		case len(got) == 2:
			kept++
		}
	}
	// The cut before the newline parses, and is left out all the same.
	if left != len(full)-last-1 || kept != 0 {
		t.Errorf("%d cuts left out, %d kept; want %d and 0", left, kept, len(full)-last-1)
	}
}

// TestReadCutUnquotedLastValue: a cut in an unquoted last value parses
// (stream 1234 read as 12) and is left out all the same, since a last
// line without its newline is cut; so is a cut in an earlier column.
func TestReadCutUnquotedLastValue(t *testing.T) {
	rows := []recorder.Request{cutRows[0], {RunID: "r1", Seq: 1, Status: 0, Error: "timeout", Stream: 1234}}
	full := writeRows(t, rows)
	notes := collectCuts(t)
	got, err := recorder.ReadAll[recorder.Request](bytes.NewReader(full[:len(full)-3]))
	if err != nil || len(got) != 1 || len(*notes) != 1 || (*notes)[0].Line != 3 {
		t.Errorf("cut in the last value: %d rows, %v, notes %v", len(got), err, *notes)
	}
	*notes = nil
	restore := recorder.NoteCutRows(func(c recorder.CutRow) { *notes = append(*notes, c) }) // noted again: a fresh memory
	defer restore()
	got, err = recorder.ReadAll[recorder.Request](bytes.NewReader(full[:len(full)-len(",1234\n")]))
	if err != nil || len(got) != 1 || len(*notes) != 1 || (*notes)[0].File != "requests.csv" {
		t.Errorf("cut before the last column: %d rows, %v, notes %v", len(got), err, *notes)
	}
}

// TestReadBadRowStillFails: a bad row that is not a cut last row (in the
// middle, or a complete last line) is an error naming its line.
func TestReadBadRowStillFails(t *testing.T) {
	full := writeRows(t, append(cutRows[:1:1], cutRows[0], cutRows[0]))
	lines := strings.SplitAfter(string(full), "\n")
	notes := collectCuts(t)
	for _, tc := range []struct {
		name, data string
		line       int
	}{
		{"middle row short", lines[0] + lines[1] + "r1,direct\n" + lines[3], 3},
		{"complete last row short", lines[0] + lines[1] + lines[2] + "r1,direct\n", 4},
		{"middle bad and last cut", lines[0] + "r1,direct\n" + lines[2] + "r1,dir", 2},
		{"complete last row bad cell", lines[0] + lines[1] + strings.Replace(lines[2], ",200,", ",2x0,", 1), 3},
	} {
		_, err := recorder.ReadAll[recorder.Request](strings.NewReader(tc.data))
		var pe *csv.ParseError
		var ce *recorder.CellError
		switch {
		case errors.As(err, &pe):
			if pe.StartLine != tc.line {
				t.Errorf("%s: %v, want line %d", tc.name, err, tc.line)
			}
		case errors.As(err, &ce):
			if ce.Line != tc.line {
				t.Errorf("%s: %v, want line %d", tc.name, err, tc.line)
			}
		default:
			t.Errorf("%s: error %v, want one on line %d", tc.name, err, tc.line)
		}
	}
	if len(*notes) != 0 {
		t.Errorf("notes %v, want none", *notes)
	}
}

// TestAppendCutLastRow: resuming a file cut at every byte of its last row
// cuts that row off (noted) or, when it parses, ends its line, so the rows
// the resumed session appends stay rows of their own.
func TestAppendCutLastRow(t *testing.T) {
	full := writeRows(t, cutRows)
	last := len(writeRows(t, cutRows[:1]))
	next := recorder.Request{RunID: "r2", Route: "direct", Seq: 0, Status: 200, LatencyMS: 3}
	for n := last; n < len(full); n++ {
		notes := collectCuts(t)
		dir := t.TempDir()
		path := filepath.Join(dir, "requests.csv")
		if err := os.WriteFile(path, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := recorder.AppendFile[recorder.Request](dir)
		if err != nil {
			t.Fatalf("cut at byte %d: %v", n, err)
		}
		if err := w.Write(next); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := recorder.ReadFile[recorder.Request](path)
		if err != nil {
			t.Fatalf("cut at byte %d: after append: %v", n, err)
		}
		want := []recorder.Request{cutRows[0], next} // a last line without its newline is cut, even one that parses
		if d := recordertest.DiffRows(want, got, 0); d != "" {
			t.Fatalf("cut at byte %d: after append: %s", n, d)
		}
		if n == last {
			if len(*notes) != 0 {
				t.Errorf("no cut: notes %v", *notes)
			}
			continue
		}
		if len(*notes) != 1 || !(*notes)[0].Removed || (*notes)[0].File != path || (*notes)[0].Offset != int64(last) {
			t.Fatalf("cut at byte %d: notes %+v, want one removal from %s", n, *notes, path)
		}
		if s := (*notes)[0].String(); !strings.Contains(s, "; removed it before appending") {
			t.Errorf("note %q", s)
		}
	}

	// An unquoted last value cut short parses, and is removed all the
	// same: the appended row starts where it started.
	rows := []recorder.Request{cutRows[0], {RunID: "r1", Seq: 1, Error: "timeout"}}
	full = writeRows(t, rows)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "requests.csv"), full[:len(full)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := recorder.AppendFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(next); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if d := recordertest.DiffRows([]recorder.Request{rows[0], next}, got, 0); d != "" {
		t.Errorf("after append to an unterminated row: %s", d)
	}
}

// TestKeepRunsCutLastRow: resuming drops a killed session's cut last row
// (noted) with the incomplete runs' rows, at every byte it can be cut at,
// rather than refusing the file; a bad row in the middle is still refused.
func TestKeepRunsCutLastRow(t *testing.T) {
	full := writeRows(t, cutRows)
	last := len(writeRows(t, cutRows[:1]))
	for n := last + 1; n < len(full)-1; n++ {
		notes := collectCuts(t)
		dir := t.TempDir()
		path := filepath.Join(dir, "requests.csv")
		if err := os.WriteFile(path, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := recorder.KeepRuns(dir, "requests.csv", func(string) bool { return true }); err != nil {
			t.Fatalf("cut at byte %d: %v", n, err)
		}
		w, err := recorder.AppendFile[recorder.Request](dir)
		if err != nil {
			t.Fatalf("cut at byte %d: append after KeepRuns: %v", n, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, full[:last]) {
			t.Fatalf("cut at byte %d: kept %q, want %q", n, b, full[:last])
		}
		if len(*notes) != 1 || !(*notes)[0].Removed || (*notes)[0].File != path || (*notes)[0].Line != 3 {
			t.Fatalf("cut at byte %d: notes %+v", n, *notes)
		}
	}
	dir := t.TempDir()
	lines := strings.SplitAfter(string(full), "\n")
	bad := lines[0] + "r1,direct\n" + strings.Join(lines[1:], "")
	if err := os.WriteFile(filepath.Join(dir, "requests.csv"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err := recorder.KeepRuns(dir, "requests.csv", func(string) bool { return true })
	if !errors.Is(err, csv.ErrFieldCount) {
		t.Errorf("a short row in the middle: %v, want a field count error", err)
	}
}

// TestReadZeroTail: a host that lost power before the file's last blocks
// reached the disk can leave them as zeros (some filesystems do): a tail
// of NUL bytes without a newline reads as a cut last row, left out.
func TestReadZeroTail(t *testing.T) {
	full := writeRows(t, cutRows)
	last := len(writeRows(t, cutRows[:1]))
	for _, data := range [][]byte{
		append(full[:last:last], make([]byte, 40)...),
		append(full[:last+10:last+10], make([]byte, 40)...),
	} {
		notes := collectCuts(t)
		got, err := recorder.ReadAll[recorder.Request](bytes.NewReader(data))
		if err != nil || recordertest.DiffRows(cutRows[:1], got, 0) != "" || len(*notes) != 1 {
			t.Errorf("%q: %d rows, %v, notes %v", data[last:], len(got), err, *notes)
		}
	}
}

// TestReadRecordBounded: a record longer than recorder.MaxRecordBytes (a
// results directory's file corrupted, or not slowlab's) fails the read,
// naming the file and line, with the memory the read allocated bounded,
// where the old reader kept the whole line (64 MiB here).
func TestReadRecordBounded(t *testing.T) {
	good := writeRows(t, cutRows[:1])
	for _, tc := range []struct{ name, start string }{
		{"unquoted", "r1,direct,"},
		{"quoted", "r1,\"direct"},
	} {
		data := io.MultiReader(bytes.NewReader(good), strings.NewReader(tc.start), io.LimitReader(repeatReader('a'), 64<<20), strings.NewReader("\n"))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rows, err := recorder.ReadAll[recorder.Request](data)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d rows, %v; allocated %.1f MiB", tc.name, len(rows), err, float64(alloc)/(1<<20))
		if err == nil || !strings.Contains(err.Error(), "requests.csv: line 3: a record over 1048576 bytes") || len(rows) != 1 {
			t.Errorf("%s: %d rows, %v; want the first row and an error naming line 3 and the bound", tc.name, len(rows), err)
		}
		if alloc > 16<<20 {
			t.Errorf("%s: allocated %d bytes, want at most %d", tc.name, alloc, 16<<20)
		}
	}
}

// repeatReader reads as the byte, for ever.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
