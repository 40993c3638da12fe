package sse

import (
	"slices"
	"time"

	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 8, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: slices.Concat([]string{eventFile}, lab.ResultsFiles[Stream, RunRow]()), Smoke: smoke,
		Summary:  "Server-Sent Events streams: each event's delivery delay directly and through a buffering proxy, and the workers the streams hold",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its conditions set the proxy's buffering and count the app's held streams)"})
}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition, a 1 s stream (its shape tests cover the grid).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	c.Stream.Duration, c.Fast.Duration = lab.Duration(time.Second), lab.Duration(time.Second)
	return ""
}
