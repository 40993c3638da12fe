package labtest

import (
	"path/filepath"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// ReadRows reads the results file of row type T in dir, failing t if it
// cannot.
func ReadRows[T recorder.Row[T]](t testing.TB, dir string) []T {
	t.Helper()
	rows, err := recorder.ReadFile[T](filepath.Join(dir, recorder.FileName[T]()))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
