package recorder

// RunRow is the row type of a results file with one row per run: where
// its run_id, status and reason are, which the lab's run loop reads and
// sets (lab.VerdictOf). Each run row type implements it in one line, so
// a type without them does not compile as one.
type RunRow[T any] interface {
	Row[T]
	// VerdictFields returns r's RunID, Status and Reason.
	VerdictFields(r *T) (id, status, reason *string)
}

// VerdictFields implements RunRow.
func (Run) VerdictFields(r *Run) (id, status, reason *string) { return &r.RunID, &r.Status, &r.Reason }
