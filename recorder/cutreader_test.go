package recorder_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// TestReadCutRowWhateverTheReader: a reader that returns its last bytes
// with io.EOF (iotest.DataErrReader) reads as a file does: a complete
// file whole, a file cut in its last row without that row only, and a
// complete last row that does not parse (a bare quote) is an error, not
// a cut row left out.
func TestReadCutRowWhateverTheReader(t *testing.T) {
	rows := []recorder.Request{cutRows[0], {RunID: "r1", Route: "direct", Server: "sync-2", Rep: 1, Seq: 1, StartS: 0.5, LatencyMS: 2.25, Status: 200, Bytes: 12}, cutRows[0]}
	rows[2].Seq = 2
	full := writeRows(t, rows)
	last := len(writeRows(t, rows[:2])) // where the last row starts

	notes := collectCuts(t)
	got, err := recorder.ReadAll[recorder.Request](iotest.DataErrReader(bytes.NewReader(full)))
	if d := recordertest.DiffRows(rows, got, 0); err != nil || d != "" || len(*notes) != 0 {
		t.Errorf("complete: %d rows (%s), %v, cuts %v; want every row, none cut", len(got), d, err, *notes)
	}

	notes = collectCuts(t)
	got, err = recorder.ReadAll[recorder.Request](iotest.DataErrReader(bytes.NewReader(full[:len(full)-1])))
	if d := recordertest.DiffRows(rows[:2], got, 0); err != nil || d != "" || len(*notes) != 1 || (*notes)[0].Line != 4 {
		t.Errorf("last newline cut: %d rows (%s), %v, cuts %v; want the two rows before it, line 4 cut", len(got), d, err, *notes)
	}

	// The second row's run id r1 written r"1: a bare quote, on a line of
	// its own before the last.
	second := len(writeRows(t, rows[:1]))
	bad := slices.Concat(full[:second+1], []byte(`"`), full[second+1:])
	for name, in := range map[string][]byte{"before the last": bad, "last": slices.Concat(full[:last+1], []byte(`"`), full[last+1:])} {
		notes = collectCuts(t)
		got, err = recorder.ReadAll[recorder.Request](iotest.DataErrReader(bytes.NewReader(in)))
		if err == nil || !strings.Contains(err.Error(), "bare") || len(*notes) != 0 {
			t.Errorf("a bare quote in the row %s: %d rows, %v, cuts %v; want an error", name, len(got), err, *notes)
		}
	}
}

// TestReadRecordBoundExact: a record of MaxRecordBytes, its newline
// included, is read; one byte more is refused.
func TestReadRecordBoundExact(t *testing.T) {
	row := recorder.Request{RunID: "r1", Route: "direct", Server: "sync-2", Rep: 1, Status: 200}
	head := len(writeRows(t, []recorder.Request(nil)))
	short := len(writeRows(t, []recorder.Request{row})) - head
	for extra, ok := range map[int]bool{0: true, 1: false} {
		row.Error = strings.Repeat("a", recorder.MaxRecordBytes-short+extra)
		got, err := recorder.ReadAll[recorder.Request](bytes.NewReader(writeRows(t, []recorder.Request{row})))
		if ok && (err != nil || len(got) != 1) || !ok && (err == nil || !strings.Contains(err.Error(), "a record over")) {
			t.Errorf("a record of MaxRecordBytes + %d: %d rows, %v; want read %v", extra, len(got), err, ok)
		}
	}
}
