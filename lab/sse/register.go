package sse

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// init registers the experiment: its flags and scenario (New), its
// table (NewResult), its results files, its smoke reduction and its
// report section.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 8, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: resultsFiles, Smoke: smoke,
		Summary:  "Server-Sent Events streams: each event's delivery delay directly and through a buffering proxy, and the workers the streams hold",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its conditions set the proxy's buffering and count the app's held streams)"})
}

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{eventFile, streamFile,
	runFile, recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition, a 1 s stream (its shape tests cover the grid).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	c.Stream.Duration, c.Fast.Duration = lab.Duration(time.Second), lab.Duration(time.Second)
	return ""
}
