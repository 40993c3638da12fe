package labtest

import (
	"testing"

	"github.com/slowlab/slowlab/hops"
	"github.com/slowlab/slowlab/recorder"
)

// CheckConserved fails t unless bytes are conserved at every hop sample
// of rows (hops.csv), but for samples taken while a connection was still
// being set up (a hop's socket not yet in the dump, nothing received
// yet), which it logs.
func CheckConserved(t testing.TB, what string, rows []recorder.Hop) {
	t.Helper()
	for _, v := range hops.Check(rows) {
		if v.Setup() {
			t.Logf("%s: during setup: %s", what, v)
			continue
		}
		t.Errorf("%s: not conserved: %s", what, v)
	}
}
