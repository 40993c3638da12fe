package slowupload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Plan). An upload that ends badly (the app's timeout killed its
// worker, a reset, a 502) is an outcome in uploads.csv, not a failed run.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	return lab.Plan[RunSpec, Upload, RunRow]{Line: runLine, Measure: c.measure,
		Specs:    func() ([]RunSpec, []string) { return c.Runs(env.Stack) },
		Expected: func(s RunSpec) time.Duration { return c.Duration(s.Size) }}.Run(ctx, env, c, &Result{})
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	return fmt.Sprintf("fast %d/%d ok, p50 %s ms, p95 %s ms; uploads ok %d, 5xx %d, reset %d, timeout %d, other %d; send %s s, app read %s s; worker timeouts %s  [%s]",
		r.FastOK, r.FastTotal, lab.Num(r.P50MS, 1), lab.Num(r.P95MS, 1), r.UploadsOK, r.Uploads5xx, r.UploadsReset, r.UploadsTimeout, r.UploadsOther,
		lab.Num(r.SendS, 2), lab.Num(r.AppReadS, 2), lab.Num(r.WorkerTimeouts, 0), lab.StatusText(r.Status, r.Reason))
}

// measure performs one run: a fresh stack, the instruments, the uploads
// and the /fast schedule, then the run's verdict. Its error is only for
// results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *lab.RunFiles[Upload, RunRow]) (RunRow, error) {
	run := RunRow{RunKey: lab.RunKey{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(), Clients: spec.Uploaders, Rep: spec.Rep},
		SizeBytes: spec.Size, RateBps: int64(c.Upload.Rate), AppTimeoutS: lab.SetSeconds(spec.AppTimeout), StartedAt: time.Now().UTC(),
		Status: recorder.RunOK}
	fr, err := lab.StartFresh(ctx, env, stack.Deployment{RunID: id, Route: spec.Route, Server: spec.Server,
		AppTimeout: time.Duration(spec.AppTimeout), ClientBodyBuffer: int64(c.ClientBodyBuffer)}, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()

	l, rs, sampErr := lab.SampledLoad(fr, f.Resources, func(t0 time.Time) lab.Clients[Upload] { return c.load(ctx, env, fr.Running, spec, run, t0, f) })
	run.FastPlanned = l.Planned
	run = SummarizeRun(run, l.Reqs, l.Rows)
	run.TempPeakMiB, run.AppMemMiB, run.ProxyMemMiB = rs.TempPeakMiB, recorder.MemoryPeakMiB(rs.App), recorder.MemoryPeakMiB(rs.Proxy)
	if n, err := stack.CountWorkerTimeouts(env.LogDir(), id); err == nil {
		run.WorkerTimeouts = recorder.Some(float64(n))
	}
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr), lab.FastAccounted(run.FastTotal, run.FastPlanned))
}

// load starts the uploads at t0 and, Fast.Offset later, the open-loop
// /fast schedule, and waits for both. Every upload and every scheduled
// request gets its row as it finishes.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, spec RunSpec, run RunRow, t0 time.Time, f *lab.RunFiles[Upload, RunRow]) lab.Clients[Upload] {
	base := Upload{ClientKey: lab.ClientKey{RunKey: run.RunKey}, SizeBytes: spec.Size, RateBps: int64(c.Upload.Rate), AppTimeoutS: run.AppTimeoutS}
	return lab.RunClients(ctx, env, c.Fast, running, run.Meta(), t0, f, c.Upload.Path, true, func(i int, target *url.URL) Upload {
		up := loadgen.SlowUploader{URL: target, Size: spec.Size, Rate: float64(c.Upload.Rate), SndBuf: int(c.Upload.SndBuf),
			WriteSize: int(c.Upload.WriteSize), Timeout: time.Duration(c.Upload.Timeout), RunID: run.RunID, Metrics: env.Metrics,
			Header: http.Header{appserver.RequestIDHeader: {fmt.Sprintf("%s/upload-%d", run.RunID, i)}}}
		return uploadRow(base, t0, up.Run(ctx, i))
	})
}
