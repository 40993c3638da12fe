package slowclient

import (
	"slices"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// init registers the experiment: its flags and scenario (New), its
// table (NewResult), its results files, its smoke reduction and its
// report section.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 1, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: resultsFiles, Smoke: smoke,
		Summary: "slow downloads against a fast endpoint, directly and behind a buffering proxy",
		Shared:  lab.SharedAll})
}

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{recorder.FileName[recorder.Request](), recorder.FileName[recorder.LargeResponse](),
	recorder.FileName[recorder.ResourceSample](), recorder.FileName[recorder.Run](), recorder.FileName[recorder.Condition](),
	recorder.FileName[recorder.Hop]()}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition of each server, so that every server the scenario names
// starts, with 1 s of /fast and 1 MiB read at 4 MiB/s.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	var conds []Condition
	for _, cond := range c.Conditions {
		if !slices.ContainsFunc(conds, func(o Condition) bool { return o.Server == cond.Server }) {
			conds = append(conds, cond)
		}
	}
	c.Reps, c.Conditions = 1, conds
	c.Fast.Duration, c.Large.Size, c.SlowReader.ReadRate = lab.Duration(time.Second), 1<<20, 4<<20
	return ""
}
