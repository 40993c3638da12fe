package h2slowclient

import (
	"time"

	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 12, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) },
		Report: Section, Files: lab.ResultsFiles[Stream, RunRow](), Smoke: smoke,
		Summary:  "slow readers over HTTP/2 through the proxy: the workers one connection's streams hold, /fast on their connection, a stalled stream's end",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its routes put an HTTP/2 proxy in front of the app)"})
}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition beside /fast for 1 s.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	c.Fast.Duration = lab.Duration(time.Second)
	return ""
}
