package slowupload

import (
	"time"

	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 5, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: lab.ResultsFiles[Upload, RunRow](), Smoke: smoke,
		Summary:  "slow uploads against a fast endpoint, directly and behind a proxy that buffers request bodies or not",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its conditions set the app's timeout and the proxy's request buffering)"})
}

// smoke implements lab.Experiment.Smoke: one repetition of the first two
// conditions, 1 MiB uploaded at 1 MiB/s.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:min(2, len(c.Conditions))]
	c.Upload.Size, c.Upload.Rate, c.Fast.Duration = 1<<20, 1<<20, lab.Duration(time.Second)
	return ""
}
