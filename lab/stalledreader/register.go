package stalledreader

import (
	"time"

	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment: its flags and scenario (New), its
// table (NewResult), its results files, its smoke reduction and its
// report section.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 7, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: lab.ResultsFiles[Download, RunRow](), Smoke: smoke,
		Summary:  "clients that stop reading /large (or read it at 16 KiB/s) against the app's worker timeout and the proxy's send_timeout",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its conditions set the app's timeout and the proxy's send_timeout)"})
}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition, 1 MiB stalled for 1 s (its shape tests cover the grid).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	c.Size, c.Client.Rate, c.Client.Stall, c.Client.GiveUp = 1<<20, 1<<20, lab.Duration(time.Second), lab.Duration(15*time.Second)
	c.Fast.Duration = lab.Duration(time.Second)
	return ""
}
