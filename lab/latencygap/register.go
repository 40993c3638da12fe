package latencygap

import (
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{recorder.FileName[recorder.GapRun](), recorder.FileName[recorder.GapRow](),
	recorder.FileName[recorder.GapRequest](), recorder.FileName[recorder.GapPath]()}

// smoke implements lab.Experiment.Smoke: 3 runs of the first size at the
// first two delays, in network namespaces (root).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Runs, c.Delays, c.Sizes = 3, c.Delays[:min(2, len(c.Delays))], c.Sizes[:1]
	return "latency-gap's network namespaces"
}
