package recorder

import (
	"testing"
)

// writeRows writes rows with a Writer and returns the CSV.
func writeRows[T Row[T]](t testing.TB, rows []T) []byte {
	t.Helper()
	b, err := EncodeRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRoundTrip reads data, which must be valid, writes the rows, reads
// them back, and writes them again (RoundTripCSV).
func checkRoundTrip[T Row[T]](t *testing.T, data []byte) []T {
	t.Helper()
	rows, err := RoundTripCSV[T](data)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
