package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/target"
)

// Options are the lab's settings shared by every experiment.
type Options struct {
	Out      string    // results directory; created if missing
	Stack    Stack     // system under test
	Progress io.Writer // progress lines; io.Discard when nil
	Metrics  *loadgen.Metrics
	// SampleInterval is the resource sampling interval; recorder.DefaultInterval when 0.
	SampleInterval time.Duration
	// MaxHostCPU aborts a run (and tries it again) when host CPU
	// utilisation stays above this percentage; 0 disables the guard.
	MaxHostCPU float64
	// Resume keeps the completed runs already in Out and runs the rest.
	Resume bool
	// TracerProvider, if set, traces every request the load generator
	// sends (OTEL_TRACES_EXPORTER on slowlab reproduce); the children of
	// the embedded stack inherit the environment and trace their side.
	TracerProvider trace.TracerProvider
	// LoadgenLimits, if set, puts the lab's own process (load generator
	// and controller) in a cgroup with these limits during each run.
	LoadgenLimits *Limits
	// CgroupRoot is where cgroup hierarchies are mounted; DefaultCgroupRoot when empty.
	CgroupRoot string
	// TargetsFile, if set, is a Prometheus file_sd file that lists the
	// current run's exporter (job slowlab-exporter, label run_id), so an
	// existing Prometheus scrapes every run.
	TargetsFile string
	// OnRunStart, if set, is called when a run's load starts, with the PIDs
	// of its processes (app, proxy, exporter); tests use it to inject faults.
	OnRunStart func(runID string, pids map[string]int)
}

// SlowClientResult is what a finished (or interrupted) experiment wrote.
type SlowClientResult struct {
	Dir        string
	Runs       []recorder.Run
	Conditions []recorder.Condition
	// SamplingJitter is how late resource scrapes started, over all runs.
	SamplingJitter recorder.Jitter
}

// tables holds the open CSV writers of one results directory.
type tables struct {
	requests  *recorder.FileWriter[recorder.Request]
	larges    *recorder.FileWriter[recorder.LargeResponse]
	resources *recorder.FileWriter[recorder.ResourceSample]
	runs      *recorder.FileWriter[recorder.Run]
	jitter    recorder.Jitter // resource sampling lateness over all runs
}

func createTables(dir string) (*tables, error) {
	t := &tables{}
	var err error
	if t.requests, err = recorder.CreateFile[recorder.Request](dir); err != nil {
		return nil, err
	}
	if t.larges, err = recorder.CreateFile[recorder.LargeResponse](dir); err != nil {
		t.close()
		return nil, err
	}
	if t.resources, err = recorder.CreateFile[recorder.ResourceSample](dir); err != nil {
		t.close()
		return nil, err
	}
	if t.runs, err = recorder.CreateFile[recorder.Run](dir); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *tables) close() error {
	var errs []error
	if t.requests != nil {
		errs = append(errs, t.requests.Close())
	}
	if t.larges != nil {
		errs = append(errs, t.larges.Close())
	}
	if t.resources != nil {
		errs = append(errs, t.resources.Close())
	}
	if t.runs != nil {
		errs = append(errs, t.runs.Close())
	}
	return errors.Join(errs...)
}

// RunSlowClient runs the whole matrix and writes the results directory. A
// run that fails (a child dies, the stack does not start) is recorded as
// failed with its reason and the next run goes on. A run aborted because
// the host was too busy (Options.MaxHostCPU) is recorded as aborted and
// tried again, as RUN_ID.try2 and so on. Cancelling ctx marks the current
// run aborted, keeps everything measured so far, writes conditions.csv from
// the completed runs and returns ctx's error. With Options.Resume, the
// completed runs already in Out are kept and only the others run.
func RunSlowClient(ctx context.Context, e SlowClient, o Options) (*SlowClientResult, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if err := os.MkdirAll(filepath.Join(o.Out, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	res := &SlowClientResult{Dir: o.Out}
	var t *tables
	var err error
	if o.Resume {
		t, res.Runs, err = resumeTables(o.Out)
	} else {
		t, err = createTables(o.Out)
	}
	if err != nil {
		return nil, err
	}
	defer t.close()
	if err := writeEnvironment(o.Out, "slow-client", o); err != nil {
		return nil, err
	}

	var specs []RunSpec
	for _, spec := range e.Runs() {
		if !completed(res.Runs, spec) {
			specs = append(specs, spec)
		}
	}
	if o.Resume {
		fmt.Fprintf(o.Progress, "resume: %d runs completed in %s, %d to run\n", len(res.Runs), o.Out, len(specs))
	}
	guard := newCPUGuard(o.MaxHostCPU, "")
	pool := newStackPool(o)
	defer pool.close()
	p := newProgress(o.Progress, len(specs), func(i int) time.Duration { return e.Duration(specs[i].SlowClients) })
	var runErr error
matrix:
	for i, spec := range specs {
		for try := 1; ; try++ {
			id := spec.ID()
			if try > 1 {
				id = fmt.Sprintf("%s.try%d", id, try)
			}
			p.start(i, id)
			run, busy, err := e.runOne(ctx, spec, id, o, t, guard, pool)
			if werr := t.runs.Write(run); werr != nil && err == nil {
				err = werr
			}
			res.Runs = append(res.Runs, run)
			p.done(i, run)
			if err != nil || ctx.Err() != nil {
				runErr = err
				if runErr == nil {
					runErr = ctx.Err()
				}
				break matrix
			}
			if !busy || try > maxRetries {
				break
			}
			fmt.Fprintf(o.Progress, "        host too busy; cooling down %s before trying again\n", cooldown)
			select {
			case <-time.After(cooldown):
			case <-ctx.Done():
				runErr = ctx.Err()
				break matrix
			}
		}
	}
	res.SamplingJitter = t.jitter
	res.Conditions = recorder.SummarizeConditions(res.Runs)
	os.Remove(filepath.Join(o.Out, recorder.FileName[recorder.Condition]()))
	cw, err := recorder.CreateFile[recorder.Condition](o.Out)
	if err != nil {
		return res, errors.Join(runErr, err)
	}
	for _, c := range res.Conditions {
		if err := cw.Write(c); err != nil {
			runErr = errors.Join(runErr, err)
			break
		}
	}
	return res, errors.Join(runErr, cw.Close(), t.close())
}

// A run aborted because the host was busy is tried up to maxRetries more
// times, after a cooldown.
const maxRetries = 2

var cooldown = 5 * time.Second

// completed reports whether runs has a completed run of spec (any try).
func completed(runs []recorder.Run, spec RunSpec) bool {
	for _, r := range runs {
		if r.Status == recorder.RunOK && (r.RunID == spec.ID() || strings.HasPrefix(r.RunID, spec.ID()+".try")) {
			return true
		}
	}
	return false
}

// resumeTables keeps the completed runs of an earlier results directory:
// rows of runs that failed or were aborted are dropped (they run again), and
// the files are opened for appending.
func resumeTables(dir string) (*tables, []recorder.Run, error) {
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, recorder.FileName[recorder.Run]()))
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	ok := map[string]bool{}
	var kept []recorder.Run
	for _, r := range runs {
		if r.Status == recorder.RunOK {
			ok[r.RunID] = true
			kept = append(kept, r)
		}
	}
	err = errors.Join(
		recorder.RewriteFile(dir, func(r recorder.Request) bool { return ok[r.RunID] }),
		recorder.RewriteFile(dir, func(r recorder.LargeResponse) bool { return ok[r.RunID] }),
		recorder.RewriteFile(dir, func(r recorder.ResourceSample) bool { return ok[r.RunID] }),
		recorder.RewriteFile(dir, func(r recorder.Run) bool { return ok[r.RunID] }),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	t := &tables{}
	if t.requests, err = recorder.AppendFile[recorder.Request](dir); err == nil {
		if t.larges, err = recorder.AppendFile[recorder.LargeResponse](dir); err == nil {
			if t.resources, err = recorder.AppendFile[recorder.ResourceSample](dir); err == nil {
				t.runs, err = recorder.AppendFile[recorder.Run](dir)
			}
		}
	}
	if err != nil {
		t.close()
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	return t, kept, nil
}

// runOne performs one run. Its error is only for faults that must stop the
// matrix (writing results failed); a failed run is a Run with Status failed.
//
// busy reports that the CPU guard aborted it.
func (e SlowClient) runOne(parent context.Context, spec RunSpec, id string, o Options, t *tables, guard *cpuGuard, pool *stackPool) (_ recorder.Run, busy bool, _ error) {
	ctx, stopGuard := guard.watch(parent)
	defer stopGuard()
	run, err := e.measure(ctx, spec, id, o, t, pool)
	if run.Status == recorder.RunAborted && parent.Err() == nil && errors.Is(context.Cause(ctx), errHostBusy) {
		run.Reason = guard.why()
		return run, true, err
	}
	return run, false, err
}

// measure performs one run on ctx.
func (e SlowClient) measure(ctx context.Context, spec RunSpec, id string, o Options, t *tables, pool *stackPool) (recorder.Run, error) {
	meta := recorder.RunMeta{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(),
		SlowClients: spec.SlowClients, Rep: spec.Rep, StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	fail := func(status, reason string) recorder.Run {
		meta.Status, meta.Reason = status, reason
		return recorder.SummarizeRun(meta, nil, nil)
	}
	running, err := pool.get(ctx, meta.RunID, spec, e.LargeSize)
	if err != nil {
		if ctx.Err() != nil {
			return fail(recorder.RunAborted, "interrupted while starting the stack"), nil
		}
		return fail(recorder.RunFailed, "start stack: "+err.Error()), nil
	}
	kept := false
	defer func() {
		if !kept {
			pool.close()
		}
	}()

	exe, err := executable()
	if err != nil {
		return fail(recorder.RunFailed, "find slowlab binary: "+err.Error()), nil
	}
	groups := running.Groups()
	groups["loadgen"] = []string{"pid:" + strconv.Itoa(os.Getpid())}
	var self *selfLimit
	if o.LoadgenLimits != nil {
		// The cgroup exists before the exporter starts (it watches it),
		// and the lab enters it after, so the exporter is not limited.
		if self, err = prepareSelfLimit(o.CgroupRoot, "slowlab/"+meta.RunID+"/loadgen", *o.LoadgenLimits); err != nil {
			return fail(recorder.RunFailed, "limit the load generator: "+err.Error()), nil
		}
		groups["loadgen"] = []string{"cgroup:" + self.cg.Path()}
	}
	watch, err := startWatcher(ctx, exe, exporterLog(filepath.Join(o.Out, "logs"), meta.RunID), groups, running.TempDirs())
	if err != nil {
		if self != nil {
			self.release()
		}
		return fail(recorder.RunFailed, "start exporter: "+err.Error()), nil
	}
	if self != nil {
		if err := self.enter(); err != nil {
			watch.stop()
			return fail(recorder.RunFailed, "limit the load generator: "+err.Error()), nil
		}
	}
	defer func() {
		// The exporter first: one restarted after enter is in the cgroup.
		watch.stop()
		if self != nil {
			self.release()
		}
	}()
	endpoints := map[string]string{"slowlab-exporter": watch.addr}
	if me, ok := running.(metricsEndpoints); ok {
		maps.Copy(endpoints, me.MetricsEndpoints())
	}
	if err := writeTargets(o.TargetsFile, meta.RunID, endpoints); err != nil {
		return fail(recorder.RunFailed, err.Error()), nil
	}
	defer writeTargets(o.TargetsFile, "", nil)

	t0 := time.Now()
	samp := startSampling([]string{watch.URL()}, meta.RunID, t0, o.SampleInterval, t.resources)
	defer samp.stop()
	if o.OnRunStart != nil {
		pids := running.PIDs()
		pids["exporter"] = watch.pid()
		o.OnRunStart(meta.RunID, pids)
	}
	reqRow := func(r loadgen.Result) recorder.Request {
		row := recorder.Request{RunID: meta.RunID, Route: meta.Route, Server: meta.Server, SlowClients: meta.SlowClients,
			Rep: meta.Rep, Seq: r.Seq, ScheduledS: r.ScheduledAt.Sub(t0).Seconds(), StartS: r.Start.Sub(t0).Seconds(),
			ScheduleLagMS: ms(r.ScheduleLag), ConnectMS: ms(r.Connect), TTFBMS: ms(r.TTFB), LatencyMS: ms(r.Latency),
			Status: r.Status, Bytes: r.Bytes}
		if r.Err != nil {
			row.Error = r.Err.Error()
		}
		return row
	}

	var wg sync.WaitGroup
	downloads := make([]loadgen.Download, spec.SlowClients)
	largeURL, err := loadgen.CheckTarget(running.URL()+e.LargePath, false)
	if err != nil {
		return fail(recorder.RunFailed, err.Error()), nil
	}
	for i := range downloads {
		sr := loadgen.SlowReader{URL: largeURL, RcvBuf: e.RcvBuf, ReadSize: e.ReadSize, Rate: e.ReadRate,
			Timeout: e.SlowTimeout, RunID: meta.RunID, Metrics: o.Metrics, TracerProvider: o.TracerProvider,
			Header: http.Header{target.RequestIDHeader: {slowID(meta.RunID, i)}}}
		wg.Go(func() { downloads[i] = sr.Run(ctx, i) })
	}

	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: e.FastTimeout, TracerProvider: o.TracerProvider})
	defer client.Close()
	var writeErr error
	var reqs []recorder.Request
	loop := loadgen.OpenLoop{Client: client, URL: running.URL() + e.FastPath,
		Pacer: loadgen.ConstantPacer{Interval: time.Duration(float64(time.Second) / e.FastRate), Duration: e.FastDuration},
		Start: t0.Add(e.FastOffset), RunID: meta.RunID, Role: loadgen.RoleFast, Metrics: o.Metrics,
		OnResult: func(r loadgen.Result) {
			row := reqRow(r)
			reqs = append(reqs, row)
			if err := t.requests.Write(row); err != nil && writeErr == nil {
				writeErr = err
			}
		}}
	loop.Run(ctx)
	wg.Wait()
	end := time.Since(t0).Seconds()
	samples, jitter, sampErr := samp.stop()
	if sampErr != nil && writeErr == nil {
		writeErr = sampErr
	}

	failed := running.Failed()
	sends, sendErr := running.AppSend(ctx)
	var larges []recorder.LargeResponse
	for _, d := range downloads {
		row := recorder.LargeResponse{RunID: meta.RunID, Route: meta.Route, Server: meta.Server, SlowClients: meta.SlowClients,
			Rep: meta.Rep, Client: d.Client, Status: d.Status, Bytes: d.Bytes, ReceiveS: d.Receive.Seconds(), Complete: d.Complete}
		if v, ok := sends[slowID(meta.RunID, d.Client)]; ok {
			row.AppSendS = recorder.Some(v)
		}
		if d.Err != nil {
			row.Error = d.Err.Error()
		}
		larges = append(larges, row)
		if err := t.larges.Write(row); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	switch {
	case ctx.Err() != nil:
		meta.Status, meta.Reason = recorder.RunAborted, "interrupted: "+context.Cause(ctx).Error()
	case failed != nil:
		meta.Status, meta.Reason = recorder.RunFailed, failed.Error()
	case sendErr != nil && spec.SlowClients > 0:
		meta.Status, meta.Reason = recorder.RunFailed, "read app_send_s: "+sendErr.Error()
	}
	// A completed run leaves the stack for the next run of the same
	// deployment; any other is torn down so the next starts clean.
	kept = meta.Status == recorder.RunOK
	run := recorder.SummarizeRun(meta, reqs, larges)
	run.Components, run.TempPeakMiB = recorder.SummarizeResources(samples, 0, end)
	t.jitter.Samples = append(t.jitter.Samples, jitter.Samples...)
	t.jitter.Skipped += jitter.Skipped
	return run, writeErr
}

func slowID(runID string, client int) string { return fmt.Sprintf("%s/slow-%d", runID, client) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
