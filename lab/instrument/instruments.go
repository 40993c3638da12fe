// Package instrument owns the instruments of one run, which watch it the
// way operators watch production: the exporter (`slowlab exporter`) on
// exactly the run's processes, restarted on the same address if it dies;
// resource sampling of it into resource-samples.csv; the Prometheus
// targets file listing the run's /metrics endpoints; and the load
// generator's own cgroup, which this process enters when it runs the load
// itself, or in which RunLoad runs a load generator child (lab/loadchild).
//
// What it leaves to others: the stack and its processes are lab/stack's;
// what the exporter measures is package exporter's; the sample rows and
// their summary are recorder's; when a run's instruments start and stop,
// and the session's settings (Session), are lab's (StartFresh).
package instrument

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/lab/loadchild"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Instruments watch one run the way operators watch production: the
// exporter on the run's processes (restarted if it dies), resource
// sampling into resource-samples.csv, the Prometheus targets file, and
// the load generator's own cgroup (this process enters it when it runs the
// load itself; RunLoad runs a load generator child in it instead).
type Instruments struct {
	s     Session
	runID string
	watch *watcher
	self  *cgroup.Self
	samp  *sampling
	t0    time.Time
}

// Session is what a run's instruments need of the session they run in.
type Session struct {
	LogDir     string // where the children's logs go
	CgroupRoot string // the session's cgroup root; cgroup's default when ""
	// Loadgen are the limits of the load generator's own cgroup, which it
	// gets when LimitLoadgen (when the stack's components get cgroups).
	Loadgen      cgroup.Limits
	LimitLoadgen bool
	// TargetsFile, if set, is the Prometheus file_sd file that lists the
	// run's /metrics endpoints.
	TargetsFile string
	// SampleInterval is the resource sampling interval;
	// recorder.DefaultInterval when 0.
	SampleInterval time.Duration
	// RunStarted is told the run's processes when its load starts.
	RunStarted func(runID string, pids map[string]int)
}

// Place is where a run's load generator runs, for its instruments.
type Place int

const (
	// LoadEnters: this process, which enters the load generator's cgroup
	// after the exporter started (so the exporter is not limited).
	LoadEnters Place = iota
	// LoadInChild: a child in that cgroup (RunLoad); this process stays
	// outside, so the published limits bound the load generator alone and
	// its orchestration (sampling, CSV writing) cannot be killed by them.
	LoadInChild
	// LoadFree: this process, in no cgroup of the session.
	LoadFree
)

// Start starts the exporter on running's processes and this one, and
// lists the run's endpoints in the targets file. The load generator's
// cgroup exists before the exporter starts (it watches it); place says
// where the load generator runs.
func Start(ctx context.Context, s Session, runID string, running *stack.Running, place Place) (*Instruments, error) {
	exe, err := child.Executable()
	if err != nil {
		return nil, fmt.Errorf("find slowlab binary: %w", err)
	}
	in := &Instruments{s: s, runID: runID}
	groups := running.Groups()
	groups["loadgen"] = []string{"pid:" + strconv.Itoa(os.Getpid())}
	if s.LimitLoadgen && place != LoadFree {
		if in.self, err = cgroup.PrepareSelf(s.CgroupRoot, stack.CgroupName(runID, "loadgen"), s.Loadgen); err != nil {
			return nil, fmt.Errorf("limit the load generator: %w", err)
		}
		groups["loadgen"] = []string{"cgroup:" + in.self.Cgroup().Path()}
	}
	if in.watch, err = startWatcher(ctx, exe, exporterLog(s.LogDir, runID), groups, running.TempDirs(), running.ProxyErrorLogs()); err != nil {
		in.Stop()
		return nil, fmt.Errorf("start exporter: %w", err)
	}
	if in.self != nil && place == LoadEnters {
		if err := in.self.Enter(); err != nil {
			in.self = nil // Enter removed it
			in.Stop()
			return nil, fmt.Errorf("limit the load generator: %w", err)
		}
	}
	endpoints := map[string]string{"slowlab-exporter": in.watch.addr}
	maps.Copy(endpoints, running.MetricsEndpoints())
	if err := writeTargets(s.TargetsFile, runID, endpoints); err != nil {
		in.Stop()
		return nil, err
	}
	return in, nil
}

// ProxyGroup is the exporter's group of the run's proxy.
const ProxyGroup = "proxy"

// Start begins sampling resources at t0, the run's start, into w, and
// tells the session's RunStarted the run's processes.
func (in *Instruments) Start(t0 time.Time, w *recorder.FileWriter[recorder.ResourceSample], pids map[string]int) {
	in.t0 = t0
	in.samp = startSampling([]string{in.watch.URL()}, in.runID, t0, in.s.SampleInterval, w)
	pids["exporter"] = in.watch.pid()
	if in.s.RunStarted != nil {
		in.s.RunStarted(in.runID, pids)
	}
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
	errs = append(errs, writeTargets(in.s.TargetsFile, "", nil))
	return errors.Join(errs...)
}

// RunLoad runs a slowlab subcommand (such as long-poll's probe loop) as
// the run's load generator: a child process in the load generator's own
// cgroup, with the published limits, while this process (sampling, hop
// attribution, CSV writing) stays outside them. Each line the child
// prints on stdout goes to onLine as it arrives, so what it measured is
// written before the child ends, however it ends; its stderr goes to
// LOGDIR/RUNID-loadgen.log. The error says why the child failed: killed
// for memory (loadchild.ErrKilledForMemory, with its cgroup and limit), an exit
// status, or onLine's first error (after which the child is stopped).
// Cancelling ctx stops the child with SIGTERM, then SIGKILL.
func (in *Instruments) RunLoad(ctx context.Context, args []string, onLine func(string) error) error {
	exe, err := child.Executable()
	if err != nil {
		return fmt.Errorf("find slowlab binary: %w", err)
	}
	logPath := filepath.Join(in.s.LogDir, in.runID+"-loadgen.log")
	return loadchild.Run(ctx, in.LoadgenCgroup(), in.s.Loadgen.MemoryBytes, append([]string{exe}, args...), logPath, onLine)
}

// LoadgenCgroup is the load generator's cgroup, nil when the stack sets
// no limits for it.
func (in *Instruments) LoadgenCgroup() *cgroup.Cgroup {
	if in.self == nil {
		return nil
	}
	return in.self.Cgroup()
}
