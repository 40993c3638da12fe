package idleconn

import (
	"time"

	"github.com/slowlab/slowlab/lab"
)

// init registers the experiment.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 6, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: lab.ResultsFiles[Conn, RunRow](), Smoke: smoke,
		Summary:  "idle and slowloris connections held against each server model while /fast runs",
		Shared:   lab.SharedAll,
		External: "starts its own stack (its timeouts are deployment settings)"})
}

// smoke implements lab.Experiment.Smoke: one repetition of the first mode
// with 2 connections held 2 s, every server on the first route.
func smoke(cfg lab.Config) string {
	c := cfg.(*Config)
	c.Reps, c.Modes, c.Conns = 1, c.Modes[:1], []int{2}
	c.RouteNames = c.RouteNames[:min(1, len(c.RouteNames))]
	c.Hold, c.Fast.Duration = lab.Duration(2*time.Second), lab.Duration(time.Second)
	return ""
}
