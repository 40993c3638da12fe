package recorder

import "testing"

// checkVerdictFields sets a run row's run_id, status and reason through
// VerdictFields and reads them back from its own fields.
func checkVerdictFields[T RunRow[T]](t *testing.T, name string, get func(*T) (string, string, string)) {
	t.Helper()
	var r, zero T
	id, status, reason := zero.VerdictFields(&r)
	*id, *status, *reason = "x.rep1", RunFailed, "why"
	if a, b, c := get(&r); a != "x.rep1" || b != RunFailed || c != "why" {
		t.Errorf("%s: VerdictFields set run_id %q, status %q, reason %q; want x.rep1, failed, why", name, a, b, c)
	}
}

// TestVerdictFields: every run row's VerdictFields points at its own
// RunID, Status and Reason.
func TestVerdictFields(t *testing.T) {
	checkVerdictFields(t, "Run", func(r *Run) (string, string, string) { return r.RunID, r.Status, r.Reason })
}
