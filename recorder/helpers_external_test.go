package recorder_test

import (
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// writeRows writes rows with a Writer and returns the CSV.
func writeRows[T recorder.Row[T]](t testing.TB, rows []T) []byte {
	t.Helper()
	b, err := recordertest.EncodeRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRoundTrip reads data, which must be valid, writes the rows, reads
// them back, and writes them again (recordertest.RoundTripCSV).
func checkRoundTrip[T recorder.Row[T]](t *testing.T, data []byte) []T {
	t.Helper()
	rows, err := recordertest.RoundTripCSV[T](data)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
