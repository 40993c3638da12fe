package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Instruments watch one run the way operators watch production: the
// exporter on the run's processes (restarted if it dies), resource
// sampling into resource-samples.csv, the Prometheus targets file, and
// the load generator's own cgroup (this process enters it when it runs the
// load itself; RunLoad runs a load generator child in it instead).
type Instruments struct {
	env   *Env
	runID string
	watch *watcher
	self  *cgroup.Self
	samp  *sampling
	t0    time.Time
}

// Instrument starts the exporter on running's processes and this one, and
// lists the run's endpoints in the targets file. The load generator's
// cgroup exists before the exporter starts (it watches it) and this
// process enters it after, so the exporter is not limited: for an
// experiment whose load runs in this process.
func Instrument(ctx context.Context, env *Env, runID string, running *stack.Running) (*Instruments, error) {
	return instrument(ctx, env, runID, running, loadEnters)
}

// InstrumentLoadChild is Instrument for an experiment whose load generator
// runs as a child (Instruments.RunLoad): this process stays out of the
// load generator's cgroup, so the published limits bound the load
// generator alone, and its orchestration (sampling, CSV writing) cannot
// be killed by them; the exporter watches the cgroup.
func InstrumentLoadChild(ctx context.Context, env *Env, runID string, running *stack.Running) (*Instruments, error) {
	return instrument(ctx, env, runID, running, loadInChild)
}

// loadPlace is where a run's load generator runs, for its instruments.
type loadPlace int

const (
	loadEnters  loadPlace = iota // this process, in the load generator's cgroup
	loadInChild                  // a child in that cgroup; this process outside it
	loadFree                     // this process, in no cgroup of the session
)

func instrument(ctx context.Context, env *Env, runID string, running *stack.Running, place loadPlace) (*Instruments, error) {
	exe, err := child.Executable()
	if err != nil {
		return nil, fmt.Errorf("find slowlab binary: %w", err)
	}
	in := &Instruments{env: env, runID: runID}
	groups := running.Groups()
	groups["loadgen"] = []string{"pid:" + strconv.Itoa(os.Getpid())}
	if l, ok := env.LoadgenLimits(); ok && place != loadFree {
		if in.self, err = cgroup.PrepareSelf(env.Stack.CgroupRoot, stack.CgroupName(runID, "loadgen"), l); err != nil {
			return nil, fmt.Errorf("limit the load generator: %w", err)
		}
		groups["loadgen"] = []string{"cgroup:" + in.self.Cgroup().Path()}
	}
	if in.watch, err = startWatcher(ctx, exe, exporterLog(env.LogDir(), runID), groups, running.TempDirs(), running.ProxyErrorLogs()); err != nil {
		in.Stop()
		return nil, fmt.Errorf("start exporter: %w", err)
	}
	if in.self != nil && place == loadEnters {
		if err := in.self.Enter(); err != nil {
			in.self = nil // Enter removed it
			in.Stop()
			return nil, fmt.Errorf("limit the load generator: %w", err)
		}
	}
	endpoints := map[string]string{"slowlab-exporter": in.watch.addr}
	maps.Copy(endpoints, running.MetricsEndpoints())
	if err := writeTargets(env.TargetsFile, runID, endpoints); err != nil {
		in.Stop()
		return nil, err
	}
	return in, nil
}

// ProxyGroup is the exporter's group of the run's proxy.
const ProxyGroup = "proxy"

// Start begins sampling resources at t0, the run's start, into w, and
// tells OnRunStart the run's processes.
func (in *Instruments) Start(t0 time.Time, w *recorder.FileWriter[recorder.ResourceSample], pids map[string]int) {
	in.t0 = t0
	in.samp = startSampling([]string{in.watch.URL()}, in.runID, t0, in.env.SampleInterval, w)
	pids["exporter"] = in.watch.pid()
	in.env.RunStarted(in.runID, pids)
}

// ExporterURL is the run's exporter's /metrics, for an experiment that
// reads a metric of it beyond the resource samples.
func (in *Instruments) ExporterURL() string { return in.watch.URL() }

// Samples ends sampling and returns what it sampled and how late.
func (in *Instruments) Samples() ([]recorder.ResourceSample, recorder.Jitter, error) {
	if in.samp == nil {
		return nil, recorder.Jitter{}, nil
	}
	s, j, err := in.samp.stop()
	in.samp = nil
	return s, j, err
}

// Stop ends everything Instrument started: sampling, the exporter (first,
// since one restarted after this process entered its cgroup is in it), the
// load generator's cgroup, and the run's entries in the targets file.
// Safe to call again.
func (in *Instruments) Stop() error {
	var errs []error
	if _, _, err := in.Samples(); err != nil {
		errs = append(errs, err)
	}
	if in.watch != nil {
		in.watch.stop()
		in.watch = nil
	}
	if in.self != nil {
		errs = append(errs, in.self.Release())
		in.self = nil
	}
	errs = append(errs, writeTargets(in.env.TargetsFile, "", nil))
	return errors.Join(errs...)
}
