package buffersweep

import "github.com/slowlab/slowlab/lab"

// init registers the experiment: its flags and scenario (New), its
// table (NewResult), its results files, its smoke reduction and its
// report section.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 4, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: []string{sweepFile}, Smoke: smoke, // each cell's own files are in the cell's directory
		Summary:  "response size x read rate x route x kernel socket buffers: where buffering off stops protecting the app",
		Shared:   lab.SharedStack | lab.SharedReps | lab.SharedResume | lab.SharedHostCPU,
		External: "starts the stack per cell and, with kernel limits, inside a namespace of its own; use embedded or real"})
}

// smoke implements lab.Experiment.Smoke: one cell per kernel setting (the
// first of each list), 1 MiB read at 4 MiB/s on the first
// route; kernel settings need root (a network namespace each).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Routes = 1, c.Routes[:min(1, len(c.Routes))]
	c.Sizes, c.Rates = []lab.Size{1 << 20}, []lab.Size{4 << 20}
	c.TCPWmemMax, c.TCPRmemMax = c.TCPWmemMax[:min(1, len(c.TCPWmemMax))], c.TCPRmemMax[:min(1, len(c.TCPRmemMax))]
	if len(c.TCPWmemMax)+len(c.TCPRmemMax) > 0 {
		return "buffer-sweep's kernel settings (a network namespace each)"
	}
	return ""
}
