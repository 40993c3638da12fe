package slowclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
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
	in, err := lab.Instrument(ctx, env, id, running)
	if err != nil {
		return fail(recorder.RunFailed, err.Error()), nil
	}
	defer in.Stop()

	t0 := time.Now()
	in.Start(t0, t.resources, running.PIDs())
	hs, err := c.startHops(ctx, running, spec.SlowClients, t0)
	if err != nil {
		return fail(recorder.RunFailed, err.Error()), nil
	}
	l := c.load(ctx, env, running, &meta, t0, t)
	end := time.Since(t0).Seconds()
	hopErr := c.writeHops(env, hs, meta.RunID, l.downloads, t)
	samples, jitter, sampErr := in.Samples()
	larges, sendErr, largeErr := c.downloads(ctx, running, meta, l.downloads, t)
	c.verdict(ctx, &meta, running, sendErr, larges, l.reqs)
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
// missing (they stay in hops.csv as measured). Its error is only for rows
// that did not reach the file.
func (c *Config) writeHops(env *lab.Env, hs *hopSampling, runID string, downloads []loadgen.Download, t *tables) error {
	rows, bad, err := hs.finish(runID, downloads)
	if err != nil {
		env.Logf("%s: %v", runID, err)
	}
	if len(bad) > 0 {
		env.Logf("%s: bytes not conserved at %d hop samples; the first: %s", runID, len(bad), bad[0])
	}
	for _, r := range rows {
		if err := t.hops.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// loaded is what a run's load measured.
type loaded struct {
	downloads []loadgen.Download
	reqs      []recorder.Request
	writeErr  error
}

// load sends the run's load: the slow readers, and FastOffset later the
// open-loop /fast schedule, whose every scheduled request gets its row in
// requests.csv as it finishes (or is found never sent).
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, meta *recorder.RunMeta, t0 time.Time, t *tables) loaded {
	var l loaded
	var wg sync.WaitGroup
	l.downloads = make([]loadgen.Download, meta.SlowClients)
	largeURL, err := loadgen.CheckTarget(running.Target(stack.TargetLarge, c.Large.url()), running.AllowRemote())
	if err != nil {
		l.writeErr = err
		return l
	}
	for i := range l.downloads {
		sr := loadgen.SlowReader{URL: largeURL, AllowRemote: running.AllowRemote(), RcvBuf: int(c.SlowReader.RcvBuf), ReadSize: int(c.SlowReader.ReadSize),
			Rate: float64(c.SlowReader.ReadRate), Timeout: time.Duration(c.SlowReader.Timeout), RunID: meta.RunID,
			Metrics: env.Metrics, TracerProvider: env.TracerProvider,
			Header: http.Header{appserver.RequestIDHeader: {slowID(meta.RunID, i)}}}
		wg.Go(func() { l.downloads[i] = sr.Run(ctx, i) })
	}
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: time.Duration(c.Fast.Timeout), TracerProvider: env.TracerProvider,
		AllowRemote: running.AllowRemote()})
	defer client.Close()
	loop := loadgen.OpenLoop{Client: client, URL: running.Target(stack.TargetFast, c.Fast.Path),
		Pacer: loadgen.ConstantPacer{Interval: time.Duration(float64(time.Second) / c.Fast.Rate), Duration: time.Duration(c.Fast.Duration)},
		Start: t0.Add(time.Duration(c.Fast.Offset)), RunID: meta.RunID, Role: loadgen.RoleFast, Metrics: env.Metrics,
		OnResult: func(r loadgen.Result) {
			row := loadgen.RequestRow(*meta, t0, r)
			l.reqs = append(l.reqs, row)
			if err := t.requests.Write(row); err != nil && l.writeErr == nil {
				l.writeErr = err
			}
			env.RequestDone(meta.RunID)
		}}
	meta.FastPlanned = loop.Planned()
	loop.Run(ctx)
	wg.Wait()
	return l
}

// downloads writes the slow downloads' rows, with the app's send times.
func (c *Config) downloads(ctx context.Context, running *stack.Running, meta recorder.RunMeta, downloads []loadgen.Download, t *tables) (_ []recorder.LargeResponse, sendErr, writeErr error) {
	var done []string
	for _, d := range downloads {
		if d.Complete {
			done = append(done, slowID(meta.RunID, d.Client))
		}
	}
	sends, sendErr := appSendTimes(ctx, running, done)
	_, external := running.External() // its app reports no send times
	var larges []recorder.LargeResponse
	for _, d := range downloads {
		appSend := recorder.None()
		if v, ok := sends[slowID(meta.RunID, d.Client)]; ok {
			appSend = recorder.Some(v)
		}
		row := loadgen.DownloadRow(meta, d, appSend, !external)
		larges = append(larges, row)
		if err := t.larges.Write(row); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	return larges, sendErr, writeErr
}

// verdict says how the run ended: aborted when interrupted, failed when a
// component died, the app's send times could not be read, a download was
// incomplete or a scheduled request is missing, else ok.
func (c *Config) verdict(ctx context.Context, meta *recorder.RunMeta, running *stack.Running, sendErr error, larges []recorder.LargeResponse, reqs []recorder.Request) {
	failed := running.Failed()
	switch {
	case ctx.Err() != nil:
		meta.Status, meta.Reason = recorder.RunAborted, "interrupted: "+context.Cause(ctx).Error()
	case failed != nil:
		meta.Status, meta.Reason = recorder.RunFailed, failed.Error()
	case sendErr != nil && meta.SlowClients > 0:
		meta.Status, meta.Reason = recorder.RunFailed, "read app_send_s: "+sendErr.Error()
	case incompleteDownloads(larges) != "":
		meta.Status, meta.Reason = recorder.RunFailed, incompleteDownloads(larges)
	case meta.FastPlanned >= 0 && len(reqs) != meta.FastPlanned:
		meta.Status, meta.Reason = recorder.RunFailed, fmt.Sprintf("%d /fast requests accounted of %d planned", len(reqs), meta.FastPlanned)
	}
}

func slowID(runID string, client int) string { return fmt.Sprintf("%s/slow-%d", runID, client) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
