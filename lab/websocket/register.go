package websocket

import (
	"time"

	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 11, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: lab.ResultsFiles[Session, RunRow](), Smoke: smoke,
		Summary:  "WebSockets held beside /fast on each server model, directly and through the proxy: who holds the connection",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its conditions set the proxy and count the app's held sockets)"})
}

// smoke implements lab.Experiment.Smoke: one repetition of the first
// condition beside /fast for 1 s.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	c.Fast.Duration = lab.Duration(time.Second)
	return ""
}
