package recorder

// GapRun is one row of gap-runs.csv: one run of the latency-gap experiment
// (one condition: a size, a path, a TLS mode and a processing time, its
// Reps x Runs requests per mode), and how it ended. It is the file the
// shared run loop resumes from and records the host guard's aborts in;
// the condition's figures are its gap.csv and gap-path.csv rows, its
// requests gap-requests.csv's, all with the same run_id.
type GapRun struct {
	RunID          string
	Status, Reason string // RunOK, RunFailed or RunAborted, and why not ok
}

func (GapRun) Schema() *Schema[GapRun] { return &gapRunSchema }

var gapRunSchema = Schema[GapRun]{file: "gap-runs.csv", cols: []Column[GapRun]{
	Col("run_id", 0, func(r *GapRun) any { return &r.RunID }),
	Col("status", 0, func(r *GapRun) any { return &r.Status }),
	Col("reason", 0, func(r *GapRun) any { return &r.Reason }),
}}
