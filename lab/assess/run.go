package assess

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/hostguard"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// ErrRefused marks an assessment refused before any load for what it was
// given: a URL that does not answer as its probe needs (a large response
// too small to hold a worker, a stream that does not stay open), a bound
// it cannot judge. ErrUnavailable marks one that could not be made: the
// stack did not answer, or its baseline failed.
var (
	ErrRefused     = errors.New("refused before any load")
	ErrUnavailable = errors.New("the stack cannot be assessed: it does not answer")
)

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
	res := &Result{Dir: env.Out, Assessment: Assessment{Stack: env.Stack.Name, Server: c.Server, Route: string(c.Routes()[0]),
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
		var v Verdict
		if c.sharded() {
			at := c.probeAt(j)
			env.Logf("assess: %s at %s on the shards' clock, in %s", p, at.UTC().Format(time.RFC3339Nano), time.Until(at).Round(100*time.Millisecond))
			v, err = c.probeSharded(ctx, env, p, at, lastBaseline(res.Verdicts), reqs, samples, func(fast string) {
				if res.ShardRecord == nil {
					res.ShardRecord = c.shardRecord(ctx, fast, at.Add(-shardPlace/2))
				}
			})
		} else {
			env.Logf("assess: %s (%s left of the budget)", p, time.Until(deadline).Round(time.Second))
			v, err = c.probe(ctx, env, p, deadline, reqs, samples, lastBaseline(res.Verdicts))
		}
		stop := false
		if errors.Is(err, ErrUnavailable) && len(res.Verdicts) > 0 {
			// The stack stopped answering after earlier probes: their
			// verdicts stand and are judged, this probe has none, and
			// none after it could measure.
			v.Stopped, err, stop = "failed: "+err.Error(), nil, true
		}
		if err != nil {
			return nil, err
		}
		res.Verdicts = append(res.Verdicts, v)
		res.TookS = time.Since(start).Seconds()
		if werr := WriteAssessment(res.Dir, res.Assessment); werr != nil {
			return res, werr
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if stop {
			break
		}
	}
	return res, errors.Join(reqs.Close(), samples.Close())
}

// probe runs one probe. Its error is for an assessment that must not go
// on (refused before load); a probe that could not measure is a verdict
// with its reason. prevBase is the baseline /fast p95 of the probe
// before it (0 for none): the wait before its own baseline.
func (c *Config) probe(ctx context.Context, env *lab.Env, p Probe, deadline time.Time,
	reqs *recorder.FileWriter[recorder.Request], samples *recorder.FileWriter[recorder.ResourceSample], prevBase time.Duration) (v Verdict, err error) {
	fr, t, v, err := c.openProbe(ctx, env, p)
	if fr == nil {
		return v, err
	}
	defer fr.Close()
	r := c.newRun(env, p, t, reqs, 0)
	if c.StackSpec.External == nil {
		r.died = func() error { return stackDied(fr.Running) }
	}
	r.t0 = time.Now()
	fr.Start(r.t0, samples)
	defer c.sampled(fr, &v)
	t.streamChecked(ctx, recoverBound)
	if v.Stopped = r.beforeBaseline(ctx, prevBase, recoverBound); v.Stopped != "" {
		return v, nil
	}
	base, ok, err := r.baseline(ctx, &v, time.Now())
	if ok {
		c.levels(ctx, env, r, &v, base, deadline)
	}
	return v, err
}

// newRun is probe p's run on targets t as shard shard: the load
// generator's meter, the host-CPU guard and the lag bound from env.
func (c *Config) newRun(env *lab.Env, p Probe, t targets, reqs *recorder.FileWriter[recorder.Request], shard int) *run {
	r := &run{cfg: c, env: env, probe: p, t: t, reqs: reqs, fastTimeout: 5 * time.Second,
		meta:   recorder.RunMeta{Route: string(c.Routes()[0]), Server: c.Server, Rep: 1, Shard: shard},
		self:   newSelfMeter(env.Stack.CgroupRoot, ""),
		maxLag: DefaultMaxLag}
	if env.MaxScheduleLag > 0 {
		r.maxLag = env.MaxScheduleLag
	}
	// The guard tells other work from the run only where the stack under
	// test is not this machine's unnamed neighbour: a managed stack is the
	// session's own; an external one seen here (--app) is not, and its
	// CPU is what the probes load.
	if ext := c.StackSpec.External; ext == nil || ext.Unseen {
		r.guard = hostguard.NewGuard(env.MaxHostCPU, "")
	}
	return r
}

// sampled ends probe p's sampling on fr and puts what the instruments
// saw on v: what held the stack at its deciding level, each level's
// connections, the fix.
func (c *Config) sampled(fr *lab.Fresh, v *Verdict) {
	rs, _ := fr.Sampled(time.Now())
	for i := range v.Levels {
		h := heldBy(rs.Samples, &v.Levels[i])
		v.Levels[i].AppConns, v.Levels[i].ProxyConns = h.AppEstablished, h.ProxyEstablished
	}
	v.Held = heldBy(rs.Samples, v.LastLevel())
	if v.ClientsToDegrade != nil {
		v.Fix, v.FixDoc = fixFor(Probe(v.Probe), c.Routes()[0], v.Held)
	}
	if fix := oomFix(v.Stopped, fr.Running.OOMKills()); fix != "" {
		v.Fix, v.FixDoc = fix, "docs/proxies.md"
	}
}

// oomFix is the fix of a probe the stack died in (stopped, as
// search.stackDied says it) with a component's cgroup counting OOM kills
// (kills, by role): that component's memory, not a slow-client setting;
// "" otherwise.
func oomFix(stopped string, kills map[string]int) string {
	roles := oomKilled(kills)
	if !strings.HasPrefix(stopped, stackDiedPrefix) || len(roles) == 0 {
		return ""
	}
	return fmt.Sprintf("none for the app: the %s was killed at its cgroup's memory limit holding what the clients had not taken; give it memory for every response it holds at once, or bound what it holds (Caddy's max_buffer_size streams the rest, which ties a worker again)",
		strings.Join(roles, " and "))
}

// openProbe starts probe p's stack (a fresh managed one, or the external
// one found again) and checks its targets before any load. Without a
// stack (nil) v says why, or err that the assessment was refused.
func (c *Config) openProbe(ctx context.Context, env *lab.Env, p Probe) (fr *lab.Fresh, t targets, v Verdict, err error) {
	v = Verdict{Probe: string(p), MaxClients: c.MaxClients}
	srv, _ := stack.ParseServer(c.Server)
	fr, ferr := lab.StartFreshUnlimited(ctx, env, stack.Deployment{RunID: "assess-" + string(p), Route: c.Route, Server: srv,
		LargeSize: int64(c.LargeSize)})
	if ferr == nil {
		if t, err = c.targets(ctx, fr.Running, p); err != nil {
			fr.Close()
		}
	}
	switch {
	case (ferr != nil || err != nil) && ctx.Err() != nil: // cut short: neither failed nor refused
		v.Stopped = interrupted(ctx)
		return nil, t, v, nil
	case ferr != nil:
		v.Stopped = "failed: " + ferr.Error()
		return nil, t, v, nil
	case err != nil && !errors.Is(err, ErrUnavailable):
		return nil, t, v, fmt.Errorf("%w: %w", ErrRefused, err)
	case err != nil:
		return nil, t, v, err
	}
	if p == ProbeSlowReaders || p == ProbeStalled {
		v.Absorbs, v.Unpredicted = predictAbsorbs(c.Routes()[0], c.StackSpec.External != nil, int64(c.ServerWmem), t.largeSize,
			kernelnet.NetSettings(kernelnet.HostNamespace, nil, nil))
	}
	return fr, t, v, nil
}

// targets resolves the probe's URLs on the running stack and checks them
// before any load: the fast URL answers 2xx; the large one 2xx with at
// least MinLarge bytes (its size paces the readers); the upload URL takes
// a small body with a 2xx.
func (c *Config) targets(ctx context.Context, running *stack.Running, p Probe) (targets, error) {
	t := targets{fast: running.Target(stack.TargetFast, c.Paths.Fast), allowRemote: running.AllowRemote(),
		uploadSize: int64(c.UploadSize)}
	h2 := c.http2()
	u, err := checkTarget(t.fast, t.allowRemote, h2)
	if err != nil {
		return t, err
	}
	t.front = u.Host
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: 10 * time.Second, AllowRemote: t.allowRemote})
	defer client.Close()
	if h2 {
		t.h2 = newH2Front(u, running.ClientTLS(), t.allowRemote)
		if _, _, err = t.h2.get(ctx, t.fast, 10*time.Second); err != nil && u.Scheme == "http" {
			if h1err := stack.Answer(ctx, t.fast, t.allowRemote, stack.Reach2xx, 10*time.Second); h1err == nil {
				return t, fmt.Errorf("fast URL %s answers over HTTP/1.1, not over HTTP/2 with prior knowledge: %w", t.fast, err)
			}
		}
	} else {
		err = stack.Answer(ctx, t.fast, t.allowRemote, stack.Reach2xx, 10*time.Second)
	}
	if err != nil {
		return t, fmt.Errorf("%w: fast URL %s: %w", ErrUnavailable, t.fast, err)
	}
	target := func(kind stack.Target, pathQuery string) (*url.URL, error) {
		raw := running.Target(kind, pathQuery)
		if raw == "" {
			return nil, fmt.Errorf("probe %s: no %s URL (give --%s-url)", p, kind, kind)
		}
		return checkTarget(raw, t.allowRemote, h2)
	}
	switch p {
	case ProbeH2SlowStreams, ProbeH2OneConn:
		if t.large, err = target(stack.TargetLarge, c.Paths.Large); err != nil {
			return t, err
		}
		t.h2large = newH2Front(t.large, running.ClientTLS(), t.allowRemote)
		if t.largeSize, _, err = t.h2large.get(ctx, t.large.String(), time.Minute); err != nil {
			return t, fmt.Errorf("large URL %s does not answer over HTTP/2 (probe %s): %w", t.large, p, err)
		}
		if t.largeSize < MinLarge {
			return t, fmt.Errorf("large URL %s: %s, the probe %s wants at least 1 MiB: the proxy's buffers and the kernel's absorb a smaller response, so no stream can hold a worker with it", t.large, report.Count(int(t.largeSize), "byte"), p)
		}
	case ProbeSlowReaders, ProbeStalled:
		if t.large, err = target(stack.TargetLarge, c.Paths.Large); err != nil {
			return t, err
		}
		if t.largeSize, err = get(ctx, client, t.large.String()); err != nil {
			return t, fmt.Errorf("large URL %s: %w", t.large, err)
		}
		if p == ProbeSlowReaders && t.largeSize < MinLarge {
			return t, fmt.Errorf("large URL %s: %s, the slow-reader probe wants at least 1 MiB: the kernel's socket buffers absorb a smaller response, so no reader can hold a worker with it", t.large, report.Count(int(t.largeSize), "byte"))
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
		// The check's own stream asks to be held only a little past
		// StreamHold, where the server takes wait=.
		check, err := target(stack.TargetStream, fmt.Sprintf("%s?wait=%s", c.Paths.Stream, 2*StreamHold))
		if err != nil {
			return t, err
		}
		if t.streamCheck, err = holdsOpen(ctx, check.String(), t.allowRemote); err != nil {
			return t, fmt.Errorf("stream URL %s: %w", check, err)
		}
	}
	return t, nil
}

// StreamHold is how long the stream URL must keep a response open (its
// body unfinished) for the held-stream probe to hold anything.
const StreamHold = time.Second

// holdsOpen checks that url keeps a 2xx response open for StreamHold: a
// URL that answers at once would end every held-stream client at once, and
// the probe would call the stack strong for holding nothing. A stream
// that holds is read on to its end (recoverBound at the most), since it
// holds what the probe is about to measure (a sync worker): done is closed
// then, and the probe's baseline waits for it.
func holdsOpen(ctx context.Context, url string, allowRemote bool) (done <-chan struct{}, err error) {
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: recoverBound, AllowRemote: allowRemote})
	var r loadgen.Result
	start := time.Now()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer client.Close()
		client.Get(ctx, url, &r)
	}()
	timer := time.NewTimer(StreamHold)
	defer timer.Stop()
	select {
	case <-timer.C:
		return ended, nil // still open when StreamHold passed
	case <-ended:
	}
	switch {
	case r.Status != 0 && (r.Status < 200 || r.Status > 299):
		return nil, fmt.Errorf("status %d, want 2xx", r.Status)
	case r.Err == nil:
		return nil, fmt.Errorf("answered whole in %s: a held stream must stay open at least %s (give a long-poll or SSE URL that holds its response)",
			time.Since(start).Round(time.Millisecond), StreamHold)
	}
	return nil, r.Err
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

// stackDied is the managed stack's process that died during the probe,
// with the OOM kills its cgroup counted (the kernel's, at the memory
// limit: what ends a proxy that buffers more than its limit holds); nil
// while every process runs.
func stackDied(running *stack.Running) error {
	err := running.Failed()
	if err == nil {
		return nil
	}
	kills := running.OOMKills()
	roles := oomKilled(kills)
	if len(roles) == 0 {
		return err
	}
	for i, role := range roles {
		roles[i] = fmt.Sprintf("the %s's cgroup counted %d OOM kill(s) at its memory limit", role, kills[role])
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(roles, "; "))
}

// oomKilled are the roles whose cgroup counted OOM kills, in order.
func oomKilled(kills map[string]int) []string {
	roles := slices.Sorted(maps.Keys(kills))
	return slices.DeleteFunc(roles, func(role string) bool { return kills[role] <= 0 })
}
