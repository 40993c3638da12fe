package latencygap

import (
	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 3, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: resultsFiles, Smoke: smoke,
		Summary: "server-reported against client-observed time, with added network delay (root: network namespaces)",
		Shared:  lab.SharedReps | lab.SharedResume | lab.SharedHostCPU | lab.SharedMetrics | lab.SharedTracing})
}

// resultsFiles are the files each session writes (lab.Experiment.Files).
var resultsFiles = []string{runFile, gapFile, requestFile, pathFile, fetchFile, loadFile, pageFile}

// smoke implements lab.Experiment.Smoke: 3 runs of the first size at the
// first two delays, in network namespaces (root).
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Runs, c.Delays, c.Sizes = 3, c.Delays[:min(2, len(c.Delays))], c.Sizes[:1]
	return "latency-gap's network namespaces"
}
