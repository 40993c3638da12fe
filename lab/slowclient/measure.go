package slowclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/instrument"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// measure performs one run on ctx: it gets the stack, starts the
// instruments, sends the load and summarizes the run.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, t *tables, pool *lab.Pool) (recorder.Run, error) {
	meta := recorder.RunMeta{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(),
		SlowClients: spec.SlowClients, Rep: spec.Rep, StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	fail := func(status, reason string) recorder.Run {
		meta.Status, meta.Reason = status, reason
		return recorder.SummarizeRun(meta, nil, nil)
	}
	running, err := pool.Get(ctx, id, spec.Route, spec.Server, int64(c.Large.Size))
	if err != nil {
		if ctx.Err() != nil {
			return fail(recorder.RunAborted, "interrupted while starting the stack"), nil
		}
		return fail(recorder.RunFailed, "start stack: "+err.Error()), nil
	}
	oom0 := running.OOMKills()
	kept := false
	defer func() {
		if !kept { // the next run starts on a fresh stack
			pool.Close()
		}
	}()
	in, err := lab.InstrumentLoadChild(ctx, env, id, running)
	if err != nil {
		return fail(recorder.RunFailed, err.Error()), nil
	}
	defer func() {
		if err := in.Stop(); err != nil {
			env.Logf("run %s: clean up: %v", id, err)
		}
	}()

	var hs *hopSampling
	// started is the load generator's start line: its t0 starts the
	// resource and hop sampling.
	started := func(t0 time.Time) error {
		in.Start(t0, t.Resources, running.PIDs())
		var err error
		hs, err = c.startHops(ctx, running, spec.SlowClients, t0)
		return err
	}
	l := c.load(ctx, env, in, running, &meta, started, t)
	end := time.Since(l.t0).Seconds()
	hopErr := c.writeHops(env, hs, meta.RunID, l.downloads, t)
	samples, jitter, sampErr := in.Samples()
	larges, sendErr, largeErr := c.downloads(ctx, running, meta, l.downloads, t)
	c.verdict(ctx, &meta, running, l.loadErr, sendErr, larges, l.reqs)
	oom := oomDuring(oom0, running.OOMKills())
	if why := oomReason(oom); why != "" {
		// The OOM kill is the cause of whatever else failed.
		if meta.Status == recorder.RunOK {
			meta.Status, meta.Reason = recorder.RunFailed, why
		} else {
			meta.Reason = why + "; " + meta.Reason
		}
	}
	// A run whose rows did not all reach the results files is not ok,
	// whatever it measured: runs.csv must not claim rows the files lack.
	writeErr := errors.Join(l.writeErr, sampErr, largeErr, hopErr)
	if writeErr != nil {
		meta.Status, meta.Reason = recorder.RunFailed, "results not all written: "+writeErr.Error()
	}
	// A completed run leaves the stack for the next run of the same
	// deployment; any other is torn down so the next starts clean.
	kept = meta.Status == recorder.RunOK
	run := recorder.SummarizeRun(meta, l.reqs, larges)
	run.Components, run.TempPeakMiB = recorder.SummarizeResources(samples, 0, end)
	for i, role := range recorder.Components {
		if n, ok := oom[role]; ok {
			run.Components[i].OOMKills = recorder.Some(float64(n))
		}
	}
	t.jitter.Samples = append(t.jitter.Samples, jitter.Samples...)
	t.jitter.Skipped += jitter.Skipped
	return run, writeErr
}

// writeHops stops the hop sampling and writes hops.csv's rows of the run;
// samples where bytes were not conserved are logged, naming what was
// missing (they stay in hops.csv as measured), and so are how many samples
// the check judged when it did not judge them all. Its error is only for
// rows that did not reach the file.
func (c *Config) writeHops(env *lab.Env, hs *hopSampling, runID string, downloads []loadgen.Download, t *tables) error {
	res, sampleErr, err := hs.finish(runID, downloads, func(rows []recorder.Hop) error { return lab.WriteRows(t.hops, rows) })
	if sampleErr != nil {
		env.Logf("%s: %v", runID, sampleErr)
	}
	if hs != nil && (res.Skewed > 0 || res.Unmeasured > 0 || res.Judged == 0) {
		env.Logf("%s: %s", runID, res)
	}
	bad := res.Violations
	if len(bad) > 0 {
		env.Logf("%s: bytes not conserved at %d hop samples; the first: %s", runID, len(bad), bad[0])
	}
	return err
}

// loaded is what a run's load measured.
type loaded struct {
	t0        time.Time // the load's start, as the load generator took it
	downloads []loadgen.Download
	reqs      []recorder.Request
	writeErr  error // rows not written
	loadErr   error // why the load generator failed, if it did
	connected map[int]bool
}

// load runs the run's load generator (`slowlab slow-load`, a child in the
// load generator's cgroup): the slow readers, and FastOffset later the
// open-loop /fast schedule, whose every scheduled request gets its row in
// requests.csv as its line arrives (or is found never sent). started
// gets the load's t0 from its first line. This process, which samples and
// writes, stays out of the load generator's limits; a load generator that
// fails (killed for memory, or dead) fails the run with that reason,
// every row it reported already written.
func (c *Config) load(ctx context.Context, env *lab.Env, in *instrument.Instruments, running *stack.Running, meta *recorder.RunMeta,
	started func(time.Time) error, t *tables) loaded {
	var l loaded
	sl := slowLoad{largeURL: running.Target(stack.TargetLarge, c.Large.url()), fastURL: running.Target(stack.TargetFast, c.Fast.Path),
		runID: meta.RunID, slow: meta.SlowClients, rcvBuf: int(c.SlowReader.RcvBuf), readSize: int(c.SlowReader.ReadSize),
		readRate: float64(c.SlowReader.ReadRate), slowTimeout: time.Duration(c.SlowReader.Timeout), fastTimeout: time.Duration(c.Fast.Timeout),
		fastInterval: time.Duration(float64(time.Second) / c.Fast.Rate), fastFor: time.Duration(c.Fast.Duration),
		fastOffset: time.Duration(c.Fast.Offset), allowRemote: running.AllowRemote()}
	plan := loadgen.OpenLoop{Pacer: loadgen.ConstantPacer{Interval: sl.fastInterval, Duration: sl.fastFor}}
	meta.FastPlanned = plan.Planned()
	l.downloads = make([]loadgen.Download, meta.SlowClients)
	for i := range l.downloads {
		l.downloads[i] = loadgen.Download{Client: i, Err: errors.New("the load generator reported no download")}
	}
	loadErr := in.RunLoad(ctx, sl.args(), func(line string) error {
		w, err := loadgen.ParseWireLine(line)
		if err != nil {
			return err
		}
		if w.Kind == loadgen.KindStart {
			if !l.t0.IsZero() {
				return fmt.Errorf("a second start line %q", line)
			}
			l.t0 = time.Unix(0, w.At)
			env.Metrics.Prepare(meta.RunID, loadgen.RoleFast)
			if meta.SlowClients > 0 {
				env.Metrics.Prepare(meta.RunID, loadgen.RoleSlow)
			}
			return started(l.t0)
		}
		if l.t0.IsZero() {
			return fmt.Errorf("line %q before the start line", line)
		}
		return l.line(env, meta, w, t)
	})
	if l.t0.IsZero() {
		l.t0 = time.Now()
	}
	if ctx.Err() == nil {
		l.loadErr = loadErr
	}
	return l
}

// line takes one wire line of the load generator: a /fast request's row
// written, a slow reader's metrics, its download kept.
func (l *loaded) line(env *lab.Env, meta *recorder.RunMeta, w loadgen.WireLine, t *tables) error {
	switch w.Kind {
	case loadgen.KindFast:
		r, err := w.Result.Result()
		if err != nil {
			return err
		}
		env.Metrics.End(meta.RunID, loadgen.RoleFast, &r) // its sent line began it
		row := loadgen.RequestRow(*meta, l.t0, r)
		l.reqs = append(l.reqs, row)
		if err := t.Requests.Write(row); err != nil && l.writeErr == nil {
			l.writeErr = err
		}
		env.RequestDone(meta.RunID)
	case loadgen.KindSent:
		env.Metrics.Begin(meta.RunID, loadgen.RoleFast)
	case loadgen.KindConnect:
		if l.connected == nil {
			l.connected = map[int]bool{}
		}
		l.connected[w.Client] = true
		env.Metrics.Begin(meta.RunID, loadgen.RoleSlow)
	case loadgen.KindSlow:
		r, err := w.Result.Result()
		if err != nil {
			return err
		}
		if !l.connected[w.Client] { // no connect line began it
			env.Metrics.Begin(meta.RunID, loadgen.RoleSlow)
		}
		env.Metrics.End(meta.RunID, loadgen.RoleSlow, &r)
	case loadgen.KindDownload:
		d, err := w.Download.Download()
		if err != nil {
			return err
		}
		if d.Client < 0 || d.Client >= len(l.downloads) {
			return fmt.Errorf("download of client %d, of %d slow clients", d.Client, len(l.downloads))
		}
		l.downloads[d.Client] = d
	default:
		return fmt.Errorf("a %s line from the slow-client load generator", w.Kind)
	}
	return nil
}

// downloads writes the slow downloads' rows, with the app's send times.
func (c *Config) downloads(ctx context.Context, running *stack.Running, meta recorder.RunMeta, downloads []loadgen.Download, t *tables) (_ []recorder.LargeResponse, sendErr, writeErr error) {
	_, external := running.External() // its app reports no send times: none is waited for
	var done []string
	for _, d := range downloads {
		if d.Complete && !external {
			done = append(done, slowID(meta.RunID, d.Client))
		}
	}
	sends, sendErr := lab.AppSends(ctx, running, done, appSendWait)
	var larges []recorder.LargeResponse
	for _, d := range downloads {
		appSend := recorder.None()
		if v, ok := sends[slowID(meta.RunID, d.Client)]; ok {
			appSend = recorder.Some(v)
		}
		row := loadgen.DownloadRow(meta, d, appSend, !external)
		larges = append(larges, row)
		if err := t.Items.Write(row); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	return larges, sendErr, writeErr
}

// appSendWait bounds how long the lab waits, after the downloads ended,
// for the app's record of a download the client completed (lab.AppSends).
var appSendWait = 10 * time.Second

// incompleteDownloads says which downloads of a run were not complete, or
// "" when all were.
func incompleteDownloads(larges []recorder.LargeResponse) string {
	var first recorder.LargeResponse
	n := 0
	for _, l := range larges {
		if l.Outcome != recorder.DownloadComplete {
			if n == 0 {
				first = l
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d downloads incomplete (client %d: %s: %s); left out of app_send_s and client_receive_s",
		n, len(larges), first.Client, first.Outcome, first.Error)
}

// verdict says how the run ended: aborted when interrupted, failed when
// the load generator or a component died, the app's send times could not
// be read, a download was incomplete or a scheduled request is missing,
// else ok.
func (c *Config) verdict(ctx context.Context, meta *recorder.RunMeta, running *stack.Running, loadErr, sendErr error, larges []recorder.LargeResponse, reqs []recorder.Request) {
	failed := running.Failed()
	switch {
	case ctx.Err() != nil:
		meta.Status, meta.Reason = recorder.RunAborted, "interrupted: "+context.Cause(ctx).Error()
	case loadErr != nil:
		meta.Status, meta.Reason = recorder.RunFailed, loadErr.Error()
	case failed != nil:
		meta.Status, meta.Reason = recorder.RunFailed, failed.Error()
	case sendErr != nil && meta.SlowClients > 0:
		meta.Status, meta.Reason = recorder.RunFailed, "read app_send_s: "+sendErr.Error()
	case incompleteDownloads(larges) != "":
		meta.Status, meta.Reason = recorder.RunFailed, incompleteDownloads(larges)
	case lab.FastAccounted(len(reqs), meta.FastPlanned) != "":
		meta.Status, meta.Reason = recorder.RunFailed, lab.FastAccounted(len(reqs), meta.FastPlanned)
	}
}

func slowID(runID string, client int) string { return fmt.Sprintf("%s/slow-%d", runID, client) }

// oomDuring is, by role, the OOM kills between two counts of the same
// cgroups (a stack kept from the previous run has its counts so far).
func oomDuring(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for role, n := range after {
		if b, ok := before[role]; ok {
			out[role] = n - b
		}
	}
	return out
}

// oomReason names the components the kernel killed processes of for
// memory during the run, "" when none.
func oomReason(oom map[string]int) string {
	var parts []string
	for _, role := range recorder.Components {
		if n := oom[role]; n > 0 {
			what := "processes"
			if n == 1 {
				what = "process"
			}
			parts = append(parts, fmt.Sprintf("%s: %d %s killed for memory (OOM, cgroup memory limit reached)", role, n, what))
		}
	}
	return strings.Join(parts, "; ")
}
