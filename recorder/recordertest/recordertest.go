// Package recordertest holds the row contract's tests for any row type,
// recorder's own or one an experiment's package declares with
// recorder.Tagged or NewSchema: a round-trip property, the coverage of
// the row's fields by its columns, and a fuzz target for its reader
// seeded from testdata. It owns the checks these run (rowcheck.go:
// RandomRow, DiffRows, EncodeRows, RoundTripCSV, CoverageGap, FuzzSeeds)
// and the layout a test pins (Layout, AddedColumns); recorder itself
// keeps only what writes and reads results files.
package recordertest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// RoundTrip is the property test: rows whose values lie on each column's
// grid read back exactly as written.
func RoundTrip[T recorder.Row[T]](t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(20250301, uint64(len(recorder.FileName[T]()))))
	for batch := range 50 {
		rows := make([]T, 1+rng.IntN(100))
		for i := range rows {
			rows[i] = RandomRow[T](rng, false)
		}
		out, err := EncodeRows(rows)
		if err != nil {
			t.Fatal(err)
		}
		got, err := recorder.ReadAll[T](bytes.NewReader(out))
		if err != nil {
			t.Fatalf("batch %d: read back: %v\n%s", batch, err, out)
		}
		if d := DiffRows(rows, got, 0); d != "" {
			t.Fatalf("batch %d: %s\n%s", batch, d, out)
		}
	}
}

// Coverage: every field of T has exactly one column.
func Coverage[T recorder.Row[T]](t *testing.T) {
	t.Helper()
	if gap := CoverageGap[T](); gap != "" {
		t.Error(gap)
	}
}

// FuzzRead seeds from testdata/<name>.csv and testdata/<name>-invalid-*.csv
// where they exist (name is T's file's, without .csv), and from files of
// generated rows with some broken variants. ReadAll must never panic, and
// whatever it accepts must survive a write/read round trip: the rows come
// back equal up to the columns' precision, and writing them again is a
// fixed point.
func FuzzRead[T recorder.Row[T]](f *testing.F) {
	base := strings.TrimSuffix(recorder.FileName[T](), ".csv")
	valid, err := filepath.Glob(filepath.Join("testdata", base+".csv"))
	if err != nil {
		f.Fatal(err)
	}
	invalid, err := filepath.Glob(filepath.Join("testdata", base+"-invalid-*.csv"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range slices.Concat(valid, invalid) {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range FuzzSeeds[T]() {
		f.Add(s)
	}
	f.Cleanup(recorder.NoteCutRows(func(recorder.CutRow) {}))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := recorder.ReadAll[T](bytes.NewReader(data))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if _, err := RoundTripCSV[T](data); err != nil {
			t.Fatal(err)
		}
		// Cut where a killed writer can, in the last row: the rows before
		// it still read, and the cut row is left out or, parsing, kept.
		if len(data) < 2 || data[len(data)-1] != '\n' {
			return
		}
		cut := data[:len(data)-1-int(data[0])%len(data)]
		got, err := recorder.ReadAll[T](bytes.NewReader(cut))
		if bytes.Count(cut, []byte("\n")) < bytes.Count(data, []byte("\n"))-1 || len(rows) == 0 {
			return // not within the last line (or no rows)
		}
		if err != nil {
			t.Fatalf("cut to %d of %d bytes: %v", len(cut), len(data), err)
		}
		if len(got) < len(rows)-1 || len(got) > len(rows) {
			t.Fatalf("cut to %d of %d bytes: %d rows, want %d or %d", len(cut), len(data), len(got), len(rows)-1, len(rows))
		}
		if d := DiffRows(rows[:len(rows)-1], got[:len(rows)-1], 1); d != "" {
			t.Fatalf("cut to %d of %d bytes: rows before the cut: %s", len(cut), len(data), d)
		}
	})
}

// Contract runs RoundTrip and Coverage as subtests named after T's file.
func Contract[T recorder.Row[T]](t *testing.T) {
	t.Run(recorder.FileName[T]()+"/round-trip", RoundTrip[T])
	t.Run(recorder.FileName[T]()+"/coverage", Coverage[T])
}

// Create creates dir's file of row type T with its header, for a test
// that writes a results directory; the test fails if it cannot.
func Create[T recorder.Row[T]](t testing.TB, dir string) *recorder.FileWriter[T] {
	t.Helper()
	w, err := recorder.CreateFile[T](dir)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
