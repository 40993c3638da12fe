package assess

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// ErrRefused marks an assessment refused before any load: a URL that does
// not answer 2xx, a large response too small to hold a worker.
var ErrRefused = errors.New("refused before any load")

// recoverBound is how long a level waits for /fast to come back to its
// baseline after the previous level's clients left.
const recoverBound = 30 * time.Second

// Run implements lab.Config: each probe on a fresh managed stack (or the
// external one), its baseline, then its levels until /fast degrades, the
// maximum, or the budget. Every verdict reaches assessment.json as soon
// as its probe ends; cancelling ctx keeps them and returns ctx's error.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := start.Add(time.Duration(c.Budget))
	if err := os.MkdirAll(env.LogDir(), 0o755); err != nil {
		return nil, err
	}
	// scenario.yaml and environment.json, as every experiment's session.
	if err := lab.RecordSession(env, c); err != nil {
		return nil, err
	}
	reqs, err := recorder.CreateFile[recorder.Request](env.Out)
	if err != nil {
		return nil, err
	}
	defer reqs.Close()
	samples, err := recorder.CreateFile[recorder.ResourceSample](env.Out)
	if err != nil {
		return nil, err
	}
	defer samples.Close()
	res := &Result{Dir: env.Out, Assessment: recorder.Assessment{Stack: env.Stack.Name, Server: c.Server, Route: string(c.Routes()[0]),
		BudgetS: time.Duration(c.Budget).Seconds()}}
	res.bounds, _ = ParseFailOn(c.FailOn)
	if c.sharded() {
		if late := time.Since(c.startAt()); late > 0 {
			return nil, fmt.Errorf("%w: start_at %s was %s ago: start every shard before it", ErrRefused, c.StartAt, late.Round(time.Millisecond))
		}
		res.Shard, res.StartAt = c.Shard, c.StartAt
		if i, _ := c.shardOf(); i > 0 {
			res.bounds = nil // shard 0 has the verdicts
		}
	}
	for j, p := range c.Probes {
		env.Logf("assess: %s (%s left of the budget)", p, time.Until(deadline).Round(time.Second))
		var v Verdict
		if c.sharded() {
			v, err = c.probeSharded(ctx, env, p, c.probeAt(j), reqs, samples)
		} else {
			v, err = c.probe(ctx, env, p, deadline, reqs, samples)
		}
		if err != nil {
			return nil, err
		}
		res.Verdicts = append(res.Verdicts, v)
		res.TookS = time.Since(start).Seconds()
		if werr := res.WriteJSON(); werr != nil {
			return res, werr
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	return res, errors.Join(reqs.Close(), samples.Close())
}

// probe runs one probe. Its error is for an assessment that must not go
// on (refused before load); a probe that could not measure is a verdict
// with its reason.
func (c *Config) probe(ctx context.Context, env *lab.Env, p Probe, deadline time.Time,
	reqs *recorder.FileWriter[recorder.Request], samples *recorder.FileWriter[recorder.ResourceSample]) (v Verdict, err error) {
	fr, t, v, err := c.openProbe(ctx, env, p)
	if fr == nil {
		return v, err
	}
	defer fr.Close()
	r := &run{cfg: c, env: env, probe: p, t: t, reqs: reqs, fastTimeout: 5 * time.Second,
		meta: recorder.RunMeta{Route: string(c.Routes()[0]), Server: c.Server, Rep: 1}}
	r.t0 = time.Now()
	fr.Start(r.t0, samples)
	defer func() {
		rs, _ := fr.Sampled(time.Now())
		v.Held = heldBy(rs.Samples, v.LastLevel())
		if v.ClientsToDegrade != nil {
			v.Fix, v.FixDoc = fixFor(p, c.Routes()[0], v.Held)
		}
	}()
	// An external stack may still be busy with the last probe's clients.
	if !r.recovered(ctx, 0, recoverBound) {
		v.Stopped = fmt.Sprintf("not recovered: /fast did not answer under %s within %s before the baseline", ms(Threshold(0)), recoverBound)
		return v, nil
	}
	base, err := r.window(ctx, string(p)+"-baseline", 0)
	if err != nil {
		v.Stopped = "failed: results not all written: " + err.Error()
		return v, nil
	}
	if base.Failed > 0 || base.OK == 0 {
		return v, fmt.Errorf("%w: %s: the baseline /fast (no slow clients) failed %d of %d (%s)", ErrRefused, t.fast, base.Failed, base.Sent, base.FirstError)
	}
	v.BaselineP50MS, v.BaselineP95MS = msf(base.P50), msf(base.P95)
	r.fastTimeout = 2 * Threshold(base.P95)
	c.levels(ctx, env, r, &v, base.P95, deadline)
	return v, nil
}

// openProbe starts probe p's stack (a fresh managed one, or the external
// one found again) and checks its targets before any load. Without a
// stack (nil) v says why, or err that the assessment was refused.
func (c *Config) openProbe(ctx context.Context, env *lab.Env, p Probe) (fr *lab.Fresh, t targets, v Verdict, err error) {
	v = Verdict{Probe: string(p), MaxClients: c.MaxClients}
	srv, _ := stack.ParseServer(c.Server)
	fr, ferr := lab.StartFresh(ctx, env, stack.Deployment{RunID: "assess-" + string(p), Route: c.Route, Server: srv,
		LargeSize: int64(c.LargeSize)}, false)
	if ferr != nil {
		v.Stopped = "failed: " + ferr.Error()
		return nil, t, v, nil
	}
	if t, err = c.targets(ctx, fr.Running, p); err != nil {
		fr.Close()
		return nil, t, v, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if p == ProbeSlowReaders || p == ProbeStalled {
		v.Absorbs, v.Unpredicted = c.absorbs(t.largeSize)
	}
	return fr, t, v, nil
}

// levels raises the clients 1, 2, 4, ... up to MaxClients, stopping at the
// first that degrades /fast, at the budget, or when /fast does not come
// back after a level.
func (c *Config) levels(ctx context.Context, env *lab.Env, r *run, v *Verdict, base time.Duration, deadline time.Time) {
	for n, prev := 1, 0; n <= c.MaxClients && prev < c.MaxClients; prev, n = n, min(2*n, c.MaxClients) {
		last := n == c.MaxClients
		need := r.hold() + time.Duration(c.Offset)
		if r.probe.keeps() && last {
			need = max(need, time.Duration(c.IdleMax))
		}
		if left := time.Until(deadline); left < need {
			v.Stopped = fmt.Sprintf("budget: %s left, a level of %d takes up to %s", left.Round(time.Second), n, need.Round(time.Second))
			return
		}
		if prev > 0 && !r.recovered(ctx, base, recoverBound) {
			v.Stopped = fmt.Sprintf("not recovered: /fast did not come back under %s within %s after %d clients", ms(Threshold(base)), recoverBound, prev)
			return
		}
		env.Logf("assess: %s: %d clients (%s left)", r.probe, n, time.Until(deadline).Round(time.Second))
		lv, err := r.level(ctx, n, base, last)
		if stop := addLevel(ctx, v, lv, err); stop {
			return
		}
	}
	v.Stopped = fmt.Sprintf("not degraded with %d", c.MaxClients)
}

// addLevel records a level run and whether the probe stops there: its results
// not all written, interrupted, or /fast degraded.
func addLevel(ctx context.Context, v *Verdict, lv Level, err error) (stop bool) {
	v.Levels = append(v.Levels, lv)
	v.Tried = lv.Clients
	switch {
	case err != nil:
		v.Stopped = "failed: results not all written: " + err.Error()
	case ctx.Err() != nil:
		v.Stopped = "interrupted: " + context.Cause(ctx).Error()
	case lv.Degraded != "":
		v.ClientsToDegrade = &v.Levels[len(v.Levels)-1].Clients
		if lv.FastOK > 0 {
			v.AtP95MS = &v.Levels[len(v.Levels)-1].P95MS
		}
		v.AtFailed = lv.FastFail
		v.Stopped = "degraded: " + lv.Degraded
	default:
		return false
	}
	return true
}

// targets resolves the probe's URLs on the running stack and checks them
// before any load: the fast URL answers 2xx; the large one 2xx with at
// least MinLarge bytes (its size paces the readers); the upload URL takes
// a small body with a 2xx.
func (c *Config) targets(ctx context.Context, running *stack.Running, p Probe) (targets, error) {
	t := targets{fast: running.Target(stack.TargetFast, c.Paths.Fast), allowRemote: running.AllowRemote(),
		uploadSize: int64(c.UploadSize)}
	u, err := loadgen.CheckTarget(t.fast, t.allowRemote)
	if err != nil {
		return t, err
	}
	t.front = u.Host
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: 10 * time.Second, AllowRemote: t.allowRemote})
	defer client.Close()
	if _, err := get(ctx, client, t.fast); err != nil {
		return t, fmt.Errorf("fast URL %s: %w", t.fast, err)
	}
	target := func(kind stack.Target, pathQuery string) (*url.URL, error) {
		raw := running.Target(kind, pathQuery)
		if raw == "" {
			return nil, fmt.Errorf("probe %s: no %s URL (give --%s-url)", p, kind, kind)
		}
		return loadgen.CheckTarget(raw, t.allowRemote)
	}
	switch p {
	case ProbeSlowReaders, ProbeStalled:
		if t.large, err = target(stack.TargetLarge, c.Paths.Large); err != nil {
			return t, err
		}
		if t.largeSize, err = get(ctx, client, t.large.String()); err != nil {
			return t, fmt.Errorf("large URL %s: %w", t.large, err)
		}
		if p == ProbeSlowReaders && t.largeSize < MinLarge {
			return t, fmt.Errorf("large URL %s: %d bytes, the slow-reader probe wants at least 1 MiB: the kernel's socket buffers absorb a smaller response, so no reader can hold a worker with it", t.large, t.largeSize)
		}
	case ProbeSlowUploads:
		if t.upload, err = target(stack.TargetUpload, c.Paths.Upload); err != nil {
			return t, err
		}
		if err := post(ctx, t.upload, t.allowRemote); err != nil {
			return t, fmt.Errorf("upload URL %s: %w", t.upload, err)
		}
	case ProbeHeldStreams:
		q := fmt.Sprintf("%s?wait=%s", c.Paths.Stream, (4 * time.Duration(c.Window+c.Offset)).Round(time.Second))
		if t.stream, err = target(stack.TargetStream, q); err != nil {
			return t, err
		}
	}
	return t, nil
}

// get fetches url and returns its body's size; an error for a failed
// request or a status that is not 2xx.
func get(ctx context.Context, client *loadgen.Client, url string) (int64, error) {
	var r loadgen.Result
	client.Get(ctx, url, &r)
	switch {
	case r.Err != nil:
		return 0, r.Err
	case r.Status < 200 || r.Status > 299:
		return 0, fmt.Errorf("status %d, want 2xx", r.Status)
	}
	return r.Bytes, nil
}

// post sends a small body to url: an upload URL must answer it 2xx.
func post(ctx context.Context, u *url.URL, allowRemote bool) error {
	up := loadgen.SlowUploader{URL: u, Size: 1024, Rate: 1 << 30, WriteSize: 1024, Timeout: 10 * time.Second, AllowRemote: allowRemote}
	got := up.Run(ctx, 0)
	switch {
	case got.Err != nil:
		return got.Err
	case got.Status < 200 || got.Status > 299:
		return fmt.Errorf("a 1 KiB POST got status %d, want 2xx", got.Status)
	}
	return nil
}
