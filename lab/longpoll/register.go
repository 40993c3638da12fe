package longpoll

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{recorder.FileName[recorder.Probe](), recorder.FileName[recorder.LongPollGroup](),
	recorder.FileName[recorder.LongPollRun](), recorder.FileName[recorder.ResourceSample]()}

// smoke implements lab.Experiment.Smoke: one repetition of the first two
// conditions, 2 s each.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:min(2, len(c.Conditions))]
	c.Seconds, c.Wait, c.Lead = lab.Duration(2*time.Second), lab.Duration(time.Second), lab.Duration(500*time.Millisecond)
	return ""
}
