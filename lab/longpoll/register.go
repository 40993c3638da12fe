package longpoll

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 2, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: resultsFiles, Smoke: smoke,
		Summary: "long-polls held against worker slots while probes measure what is left",
		Shared:  lab.SharedAll})
}

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{probeFile, groupFile, runFile, recorder.FileName[recorder.ResourceSample]()}

// smoke implements lab.Experiment.Smoke: one repetition of the first two
// conditions, 2 s each.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:min(2, len(c.Conditions))]
	c.Seconds, c.Wait, c.Lead = lab.Duration(2*time.Second), lab.Duration(time.Second), lab.Duration(500*time.Millisecond)
	return ""
}
