package assess

import (
	"context"
	"fmt"
	"time"

	"github.com/slowlab/slowlab/report"
)

// baseline measures /fast with no slow clients from t0 into v, and sets
// the levels' /fast timeout from its p95, which it returns; false when
// the probe stops there (v.Stopped says why, or err). A baseline cut
// short by ctx's end is interrupted, not a stack that does not answer.
//
// The baseline is judged as a level is (invalidWhy): a window where the
// load generator was throttled, late or beside other work says nothing
// of the stack. Its p95 would set the degradation threshold from the
// generator's stall (ten times too high a baseline hides a stack that
// degrades) and its failures would be blamed on the stack, so it is run
// again (maxTries in all; once on a shard's fixed clock), and invalid at
// every try the probe stops without a verdict.
func (r *run) baseline(ctx context.Context, v *Verdict, t0 time.Time) (time.Duration, bool, error) {
	tries, last := maxTries, ""
	if r.cfg.sharded() {
		tries = 1
	}
	for k := 1; k <= tries; k++ {
		if k > 1 {
			t0 = time.Now()
		}
		base, why, err := r.baselineWindow(ctx, t0)
		switch {
		case err != nil:
			v.Stopped = "failed: results not all written: " + err.Error()
			return 0, false, nil
		case ctx.Err() != nil:
			v.Stopped = interrupted(ctx)
			return 0, false, nil
		case why != "":
			last = why
			r.env.Logf("assess: %s: baseline, try %d: invalid, %s", r.probe, k, why)
			continue
		case base.Failed > 0 || base.OK == 0:
			return 0, false, fmt.Errorf("%w: %s: the baseline /fast (no slow clients) failed %d of %d (%s)", ErrUnavailable, r.t.fast, base.Failed, base.Sent, base.FirstError)
		}
		v.BaselineP50MS, v.BaselineP95MS = msf(base.P50), msf(base.P95)
		r.fastTimeout = 2 * Threshold(base.P95)
		return base.P95, true, nil
	}
	v.Stopped = fmt.Sprintf("invalid: the baseline (/fast with no slow clients) was invalid %s (last: %s)", report.Count(tries, "time"), last)
	return 0, false, nil
}

// baselineWindow runs one baseline window from t0 under the host-CPU
// guard: its summary, and why it says nothing of the stack ("" when
// valid).
func (r *run) baselineWindow(ctx context.Context, t0 time.Time) (Window, string, error) {
	var w Window
	var err error
	var lv Level
	busy := r.guarded(ctx, &lv, func(gctx context.Context) { w, err = r.windowFrom(gctx, string(r.probe)+"-baseline", 0, t0) })
	lv.FastLagMaxMS = msf(w.LagMax)
	return w, invalidWhy(&lv, r.maxLag, busy), err
}

// beforeBaseline waits until /fast answers as the stack's own, before the
// baseline: an external stack may still be busy with the last probe's
// clients. After a probe whose baseline p95 was prevBase, /fast must come
// back under that probe's threshold; before the first (prevBase 0),
// nothing is known of the stack's speed, so a 2xx within the /fast
// timeout does: a stack whose /fast takes 700 ms is slow, not still
// loaded, and was refused "not recovered" under 500 ms; one that does
// not answer within the timeout failed, no probe having loaded it. bound
// is how long it waits (recoverBound; a shard's, until its slot). "" when
// it answered, else the probe's Stopped.
func (r *run) beforeBaseline(ctx context.Context, prevBase, bound time.Duration) string {
	limit := r.fastTimeout
	if prevBase > 0 {
		limit = Threshold(prevBase)
	}
	back, why := r.answersUnder(ctx, limit, bound)
	bound = bound.Round(100 * time.Millisecond) // a shard's is to its slot, to the ns
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx)
	case why != "":
		return "invalid: waiting for /fast before the baseline: " + why
	case !back && prevBase == 0:
		// No probe loaded it: too slow (or failing), not unrecovered.
		return fmt.Sprintf("failed: /fast did not answer 2xx within %s in %s before the baseline: a stack must answer /fast within %s to be assessed", ms(limit), bound, ms(limit))
	case !back:
		return fmt.Sprintf("not recovered: /fast did not answer under %s within %s before the baseline", ms(limit), bound)
	}
	return ""
}

// lastBaseline is the baseline /fast p95 of the last verdict that has
// one (0 for none).
func lastBaseline(vs []Verdict) time.Duration {
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].BaselineP95MS > 0 {
			return msDur(vs[i].BaselineP95MS)
		}
	}
	return 0
}
