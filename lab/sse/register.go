package sse

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{recorder.FileName[recorder.SSEEvent](), recorder.FileName[recorder.SSEStream](),
	recorder.FileName[recorder.SSERun](), recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition, a 1 s stream (its shape tests cover the grid).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	c.Stream.Duration, c.Fast.Duration = lab.Duration(time.Second), lab.Duration(time.Second)
	return ""
}
