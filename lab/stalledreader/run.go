package stalledreader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/proxy"
	"github.com/slowlab/slowlab/recorder"
)

// files are the open results files of a session.
type files = lab.RunFiles[Download, RunRow]

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Plan: resume, the host-CPU guard, progress), writing
// stalled-downloads.csv, stalled-runs.csv, requests.csv,
// resource-samples.csv and environment.json, after a warning for each
// condition whose path may hold the whole response its readers are meant
// to hold a worker with (MayHold), and before one for each whose
// downloads it held (Measured). A run whose stack fails is
// recorded as failed and the next goes on; a download cut short is an
// outcome, not a failed run. Cancelling ctx keeps what was measured and
// returns ctx's error.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	c.warnMayHold(env, false)
	res, err := lab.Plan[RunSpec, Download, RunRow]{Line: runLine, Measure: c.measure,
		Specs:    func() ([]RunSpec, []string) { return c.Runs(env.Stack) },
		Expected: func(s RunSpec) time.Duration { return c.Duration(s.Mode) }}.Run(ctx, env, c, &Result{})
	c.warnMayHold(env, true)
	return res, err
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	return fmt.Sprintf("fast %d/%d ok, p95 %s ms; downloads complete %d, truncated %d, reset %d, timeout %d, other %d; by app_timeout %d, send_timeout %d, client %d, unknown %d; bytes %s; worker timeouts %s; app held %s s  [%s]",
		r.FastOK, r.FastTotal, lab.Num(r.P95MS, 1), r.Complete, r.Truncated, r.Reset, r.Timeout, r.Other, r.ByAppTimeout, r.BySendTimeout,
		r.ByClient, r.ByUnknown, lab.Num(r.BytesMedian, 0), lab.Num(r.WorkerTimeouts, 0), lab.Num(r.AppHeldS, 2), lab.StatusText(r.Status, r.Reason))
}

// measure performs one run: a fresh stack, the instruments, the readers
// and the /fast schedule, then the run's verdict. Its error is only for
// results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *files) (RunRow, error) {
	run := RunRow{RunKey: lab.RunKey{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(), Clients: spec.Clients, Rep: spec.Rep},
		Mode: spec.Mode, SizeBytes: int64(c.Size), RateBps: int64(c.Client.Rate),
		GiveUpS: time.Duration(c.Client.GiveUp).Seconds(), AppTimeoutS: lab.SetSeconds(spec.AppTimeout), StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	if spec.Mode == ModeStall { // a slow reader's stall is 0
		run.StallS = time.Duration(c.Client.Stall).Seconds()
	}
	if spec.Route.Proxied() { // its own send_timeout, or the proxy's default
		run.SendTimeoutS = recorder.Some(cmp.Or(time.Duration(spec.SendTimeout), proxy.DefaultSendTimeout).Seconds())
	}
	fr, err := lab.StartFresh(ctx, env, stack.Deployment{RunID: id, Route: spec.Route, Server: spec.Server, LargeSize: int64(c.Size),
		AppTimeout: time.Duration(spec.AppTimeout), SendTimeout: time.Duration(spec.SendTimeout)}, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Stop()

	t0 := time.Now()
	fr.Start(t0, f.Resources)
	l := c.load(ctx, env, fr.Running, spec, run, t0, f)
	run.FastPlanned = l.Planned
	_, sampErr := fr.Sampled(time.Now())
	var complete []string
	for i, d := range l.Rows {
		if d.Outcome == OutcomeComplete {
			complete = append(complete, requestID(id, i))
		}
	}
	sends, _ := lab.AppSends(ctx, fr.Running, complete, appSendWait) // killed workers leave none
	ev, evErr := gatherEvidence(ctx, fr.Running, env.LogDir(), id)
	if evErr == nil {
		run.WorkerTimeouts = recorder.Some(float64(len(ev.kills)))
	}
	for i := range l.Rows {
		d := &l.Rows[i]
		if v, ok := sends[requestID(id, i)]; ok {
			d.AppSendS = recorder.Some(v)
		}
		d.EndedBy = ender(*d, requestID(id, i), ev, t0)
		if err := f.Items.Write(*d); err != nil && l.WriteErr == nil {
			l.WriteErr = err
		}
	}
	run = SummarizeRun(run, l.Reqs, l.Rows)
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr),
		lab.Reason("who ended the downloads: ", evErr), lab.FastAccounted(run.FastTotal, run.FastPlanned))
}

// load starts the readers at t0 and, Fast.Offset later, the open-loop
// /fast schedule, and waits for both. Every scheduled request gets its row
// as it finishes; the downloads' rows are written once their ender is
// known.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, spec RunSpec, run RunRow, t0 time.Time, f *files) lab.Clients[Download] {
	base := Download{ClientKey: lab.ClientKey{RunKey: run.RunKey}, Mode: run.Mode, SizeBytes: run.SizeBytes, RateBps: run.RateBps, AppTimeoutS: run.AppTimeoutS, SendTimeoutS: run.SendTimeoutS, StallS: run.StallS,
		GiveUpS: run.GiveUpS}
	return lab.RunClients(ctx, env, c.Fast, running, run.Meta(), t0, f, c.Client.Path, false, func(i int, u *url.URL) Download {
		r := loadgen.SlowReader{URL: downloadURL(u, i), RcvBuf: int(c.Client.RcvBuf), ReadSize: int(c.Client.ReadSize), Rate: float64(c.Client.Rate),
			Timeout: time.Duration(c.Client.GiveUp), RunID: run.RunID, Metrics: env.Metrics, TracerProvider: env.TracerProvider,
			Header: http.Header{appserver.RequestIDHeader: {requestID(run.RunID, i)}}}
		if spec.Mode == ModeStall {
			r.Stall, r.StallAfter = time.Duration(c.Client.Stall), int64(c.Client.StallAfter)
		}
		return downloadRow(base, t0, r.Run(ctx, i))
	})
}

// requestID is the request id of a run's download by client i.
func requestID(runID string, i int) string { return fmt.Sprintf("%s/stalled-%d", runID, i) }

// downloadRow is d as a stalled-downloads.csv row (its ender still unset).
func downloadRow(row Download, t0 time.Time, d loadgen.Download) Download {
	row.Client, row.Status, row.Bytes, row.StallBytes, row.ContentLength = d.Client, d.Status, d.Bytes, d.StallBytes, -1
	if v := d.Header.Get("Content-Length"); v != "" {
		fmt.Sscan(v, &row.ContentLength) // left -1 when it does not parse
	}
	start := d.Start
	if start.IsZero() {
		start = t0
	}
	row.StartS = start.Sub(t0).Seconds()
	rel := func(t time.Time) recorder.Maybe {
		if t.IsZero() {
			return recorder.Maybe{}
		}
		return recorder.Some(t.Sub(start).Seconds())
	}
	row.StalledS, row.ResumedS, row.LastByteS = rel(d.Stalled), rel(d.Resumed), rel(d.LastByte)
	row.EndS = d.Receive.Seconds()
	row.Outcome = outcome(d)
	if d.Err != nil {
		row.Error = d.Err.Error()
	}
	return row
}

// outcome classifies a download as the client saw it
// (Outcomes).
func outcome(d loadgen.Download) string {
	switch {
	case d.Complete:
		return OutcomeComplete
	case errors.Is(d.Err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(d.Err, syscall.ECONNRESET):
		return OutcomeReset
	case d.Status == 0 && (errors.Is(d.Err, io.EOF) || errors.Is(d.Err, io.ErrUnexpectedEOF)):
		return OutcomeReset // closed before any response
	case d.Status == http.StatusOK && errors.Is(d.Err, loadgen.ErrIncomplete):
		return OutcomeTruncated
	}
	return OutcomeError
}

// appSendWait bounds how long the lab waits, after the downloads ended,
// for the app's record of each complete download (lab.AppSends).
var appSendWait = 5 * time.Second
