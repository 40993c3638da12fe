package lab

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// Env is what an experiment's run gets: where to write, the stack to run
// on, and the session's settings and instruments.
type Env struct {
	Out      string // results directory; created if missing
	Resume   bool   // keep the completed runs already in Out, run the rest
	Stack    stack.Stack
	Progress io.Writer // progress lines; io.Discard when nil
	Metrics  *loadgen.Metrics
	// TracerProvider, if set, traces every request the load generator
	// sends; the children inherit the OTEL_* environment and trace theirs.
	TracerProvider trace.TracerProvider
	// MaxHostCPU aborts a run (and tries it again) when host CPU
	// utilisation stays above this percentage; 0 disables the guard.
	MaxHostCPU float64
	// MaxScheduleLag aborts a run (and tries it again, as the host guard
	// does) whose load generator started a measured request more than
	// this late: its latencies would measure a stalled instrument. Only
	// runs whose rows record the lag (slow-client's and buffer-sweep's)
	// are judged; 0 disables it.
	MaxScheduleLag time.Duration
	// TargetsFile, if set, is a Prometheus file_sd file that lists the
	// current run's /metrics endpoints (label run_id), so an existing
	// Prometheus scrapes every run.
	TargetsFile string
	// SampleInterval is the resource sampling interval;
	// recorder.DefaultInterval when 0.
	SampleInterval time.Duration
	// Scenario is the canonical scenario of the session, kept in Out so
	// that a resumed session can check it runs the same experiment.
	Scenario []byte

	// OnRunStart, if set, is called when a run's load starts, with the
	// PIDs of its processes (app, proxy, exporter); tests use it to
	// inject faults.
	OnRunStart func(runID string, pids map[string]int)
	// OnRequest, if set, is called once for every measured request (a
	// /fast request, a probe, a latency-gap request) as it finishes, from
	// one goroutine at a time, with its run id; tests use it to interrupt
	// a run after an observed number of requests, not a wall-clock time.
	OnRequest func(runID string)

	unmeasured *unmeasured // NoteUnmeasured's; nil outside RunSession
}

// RequestDone calls OnRequest when it is set.
func (e *Env) RequestDone(runID string) {
	if e.OnRequest != nil {
		e.OnRequest(runID)
	}
}

// RunStarted calls OnRunStart when it is set.
func (e *Env) RunStarted(runID string, pids map[string]int) {
	if e.OnRunStart != nil {
		e.OnRunStart(runID, pids)
	}
}

// Logf writes a progress line.
func (e *Env) Logf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// LogDir is where the children's logs go.
func (e *Env) LogDir() string { return filepath.Join(e.Out, "logs") }

// LoadgenLimits are the limits of the load generator's own cgroup, and
// whether it gets one (when the stack's components do).
func (e *Env) LoadgenLimits() (cgroup.Limits, bool) { return e.Stack.LoadgenLimits() }
