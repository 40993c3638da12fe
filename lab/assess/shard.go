package assess

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// A sharded assessment: N processes, on one machine or many, assess one
// external stack together, without a coordinator. Every shard derives the
// same clock from StartAt and the configuration: for each probe a baseline
// slot, then a slot per level (1, 2, 4, ... up to MaxClients), each as long
// as its clients' placement, the /fast window, the last request's timeout
// and a settle time (a holding probe's last level IdleMax at least). At a
// level of n clients shard I runs those numbered I, I+N, ... below n.
// Shard 0 also measures /fast (a few dozen requests a second need no
// sharding) and applies the degradation rule, so its assessment.json has
// the verdicts, counted in every shard's clients. The other shards cannot
// see /fast: they hold their clients at every level up to MaxClients, past
// the level where shard 0 stopped too (MaxClients bounds that).
const (
	// shardPlace is from a level's start, when every shard starts its
	// clients, to its /fast window's.
	shardPlace = time.Second
	// shardFastTimeout bounds a /fast request: the baseline's timeout and
	// the most a level's (twice the degradation threshold) may be.
	shardFastTimeout = 5 * time.Second
	// shardSettle is a slot's tail, after its clients left: shard 0's
	// recovery check before the next.
	shardSettle = 3 * time.Second
)

// shardOf is c.Shard as (I, N); (0, 1) when not sharded.
func (c *Config) shardOf() (int, int) {
	if c.Shard == "" {
		return 0, 1
	}
	i, n, err := loadgen.ParseShard(c.Shard)
	if err != nil {
		return 0, 1
	}
	return i, n
}

// sharded reports whether this process is one shard of several.
func (c *Config) sharded() bool {
	_, n := c.shardOf()
	return n > 1
}

// validateShard checks shard and start_at: a shard of several assesses an
// external stack from an instant every shard was given, on a clock that
// fits the budget.
func (c *Config) validateShard() error {
	if c.Shard == "" && c.StartAt == "" {
		return nil
	}
	if c.Shard == "" {
		return errors.New("start_at: only with shard I/N (--shard), N more than 1")
	}
	_, n, err := loadgen.ParseShard(c.Shard)
	switch {
	case err != nil:
		return err
	case n == 1 && c.StartAt != "":
		return fmt.Errorf("start_at: only with shard I/N, N more than 1 (shard is %s)", c.Shard)
	case n == 1:
		return nil
	case c.StackSpec.Stack != stack.NameExternal:
		return fmt.Errorf("shard %s: only against an external stack (--fast-url and the others): every shard would start its own managed stack", c.Shard)
	case c.StartAt == "":
		return fmt.Errorf("shard %s: give start_at (--start-at), the instant every shard starts its clock at", c.Shard)
	case c.FailOn != "":
		return fmt.Errorf("shard %s: fail_on: a shard sees only its own clients and cannot gate; give --fail-on to slowlab assess --combine with every shard's results", c.Shard)
	}
	if _, err := time.Parse(time.RFC3339Nano, c.StartAt); err != nil {
		return fmt.Errorf("start_at %q: want RFC 3339, e.g. 2026-12-05T10:00:00Z", c.StartAt)
	}
	if total := c.clockLength(); total > time.Duration(c.Budget) {
		return fmt.Errorf("shard %s: the shards' clock takes %s (every level of every probe up to %s), over the budget %s: raise budget or lower max_clients",
			c.Shard, total, report.Count(c.MaxClients, "client"), time.Duration(c.Budget))
	}
	return nil
}

// startAt is StartAt parsed (validated before).
func (c *Config) startAt() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, c.StartAt)
	return t
}

// levelsUpTo are the levels: 1, 2, 4, ... up to max, max included.
func levelsUpTo(max int) []int {
	var out []int
	for n, prev := 1, 0; n <= max && prev < max; prev, n = n, min(2*n, max) {
		out = append(out, n)
	}
	return out
}

// clockHold bounds a sharded level's clients from its start: placement,
// the window's offset and length, its last request's timeout, and a
// second.
func (c *Config) clockHold() time.Duration {
	return shardPlace + time.Duration(c.Offset) + time.Duration(c.Window) + shardFastTimeout + time.Second
}

// slotLen is how long a level (or the baseline) holds the clock.
func (c *Config) slotLen(p Probe, last bool) time.Duration {
	d := c.clockHold()
	if p.keeps() && last {
		d = max(d, time.Duration(c.IdleMax))
	}
	return d + cmp.Or(c.slotSettle, shardSettle)
}

// probeLen is a probe's baseline and every level on the clock.
func (c *Config) probeLen(p Probe) time.Duration {
	d := c.slotLen(p, false)
	ls := levelsUpTo(c.MaxClients)
	for k := range ls {
		d += c.slotLen(p, k == len(ls)-1)
	}
	return d
}

// clockLength is every probe's length on the clock.
func (c *Config) clockLength() time.Duration { return c.probeAt(len(c.Probes)).Sub(c.startAt()) }

// probeAt is when probe j's baseline slot starts on the clock.
func (c *Config) probeAt(j int) time.Time {
	at := c.startAt()
	for _, p := range c.Probes[:j] {
		at = at.Add(c.probeLen(p))
	}
	return at
}

// shareOf is how many of a level's n clients shard i of shards runs: those
// numbered i, i+shards, ... below n.
func shareOf(n, i, shards int) int {
	if n <= i {
		return 0
	}
	return (n - i + shards - 1) / shards
}

// sleepUntil waits until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// probeSharded runs probe p as this shard, its baseline slot at at.
// Once its stack's targets are checked, found(fast) is given the fast
// URL: the first probe measures the shard's clock against it. Shard 0
// waits for /fast before the slot as probe does before its baseline
// (beforeBaseline, prevBase the last probe's baseline p95).
func (c *Config) probeSharded(ctx context.Context, env *lab.Env, p Probe, at time.Time, prevBase time.Duration,
	reqs *recorder.FileWriter[recorder.Request], samples *recorder.FileWriter[recorder.ResourceSample], found func(fast string)) (v Verdict, err error) {
	shard, _ := c.shardOf()
	fr, t, v, err := c.openProbe(ctx, env, p)
	if fr == nil {
		return v, err
	}
	defer fr.Close()
	found(t.fast)
	r := c.newRun(env, p, t, reqs, shard)
	r.fastTimeout, r.t0 = shardFastTimeout, at
	if late := time.Since(at); late > 0 {
		v.Stopped = fmt.Sprintf("late: the probe's slot began %s ago on the shards' clock", late.Round(time.Millisecond))
		return v, nil
	}
	t.streamChecked(ctx, time.Until(at))
	if shard == 0 { // the unsharded probe's wait, until the slot
		if v.Stopped = r.beforeBaseline(ctx, prevBase, time.Until(at)); v.Stopped != "" {
			return v, nil
		}
	}
	if sleepUntil(ctx, at); ctx.Err() != nil { // interrupted before the slot: no window to judge
		v.Stopped = interrupted(ctx)
		return v, nil
	}
	fr.Start(at, samples)
	defer c.sampled(fr, &v)
	var base time.Duration
	if shard == 0 {
		var ok bool
		if base, ok, err = r.baseline(ctx, &v, at.Add(shardPlace)); !ok {
			return v, err
		}
		if r.fastTimeout > shardFastTimeout {
			v.Stopped = fmt.Sprintf("failed: the baseline /fast p95 %s wants a %s timeout, over the shards' clock's %s", ms(base), r.fastTimeout, shardFastTimeout)
			return v, nil
		}
	}
	c.levelsSharded(ctx, r, &v, base, at.Add(c.slotLen(p, false)))
	if shard == 0 {
		finish(&v)
	}
	return v, nil
}

// levelsSharded runs every level on the clock from at: shard 0 stops at
// the first that degrades /fast, as levels does; the others hold their
// share of every level's clients.
func (c *Config) levelsSharded(ctx context.Context, r *run, v *Verdict, base time.Duration, at time.Time) {
	shard, shards := c.shardOf()
	ls := levelsUpTo(c.MaxClients)
	for k, n := range ls {
		last := k == len(ls)-1
		start := at
		at = at.Add(c.slotLen(r.probe, last))
		if late := time.Since(start); late > 0 {
			v.Stopped = fmt.Sprintf("late: the level of %s began %s ago on the shards' clock", report.Count(n, "client"), late.Round(time.Millisecond))
			return
		}
		if shard == 0 && k > 0 {
			if back, why := r.recovered(ctx, base, time.Until(start)); why != "" {
				v.Stopped = fmt.Sprintf("invalid: waiting for /fast before the level of %s (the shards' clock waits once): %s", report.Count(n, "client"), why)
				return
			} else if !back {
				v.Stopped = fmt.Sprintf("not recovered: /fast did not come back under %s before the level of %s", ms(Threshold(base)), report.Count(n, "client"))
				return
			}
		}
		r.env.Logf("assess: %s: %s at %s, %d of them this shard's (%d/%d)", r.probe, report.Count(n, "client"), start.UTC().Format(time.RFC3339Nano), shareOf(n, shard, shards), shard, shards)
		lv, err := r.levelIn(ctx, n, base, last, slot{share: shareOf(n, shard, shards), at: start, measure: shard == 0, keep: true})
		v.Levels = append(v.Levels, lv)
		v.Tried = n
		switch {
		case err != nil:
			v.Stopped = "failed: results not all written: " + err.Error()
		case ctx.Err() != nil:
			v.Stopped = interrupted(ctx)
		case lv.Status == statusInvalid:
			v.Stopped = fmt.Sprintf("invalid: the level of %s (the shards' clock runs each once): %s", report.Count(n, "client"), lv.Invalid)
		case lv.Status == statusShort && shard == 0:
			v.Stopped = fmt.Sprintf("short: %d of this shard's %s in place at the level of %d: the stack did not take them", lv.Connected, report.Count(shareOf(n, shard, shards), "client"), n)
		case lv.Status == statusDegraded:
			v.Stopped = "degraded: " + lv.Degraded
		default:
			continue
		}
		return
	}
	if shard == 0 {
		v.Stopped = fmt.Sprintf("not degraded with %d", c.MaxClients)
		return
	}
	v.Stopped = fmt.Sprintf("shard %d/%d: held its share of every level's clients; shard 0 measured /fast and has the verdict", shard, shards)
}
