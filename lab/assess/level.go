package assess

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/hostguard"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// The degradation rule: /fast degrades at a level when one of its
// requests fails, or when its p95 is over Factor times the baseline's and
// over the baseline's plus Margin.
const (
	Factor = 10
	Margin = 500 * time.Millisecond
)

// Threshold is the p95 over which /fast has degraded, for a baseline p95.
func Threshold(base time.Duration) time.Duration {
	return max(Factor*base, base+Margin)
}

// Degraded applies the rule to a window: its reason ("" when /fast held).
func Degraded(base time.Duration, w Window) string {
	switch {
	case w.Sent == 0:
		return "no /fast request was sent"
	case w.Failed > 0:
		return fmt.Sprintf("%d of %d /fast requests failed (%s)", w.Failed, w.Sent, w.FirstError)
	case w.P95 > Threshold(base):
		return fmt.Sprintf("/fast p95 %s over %s (10x the baseline %s, and baseline + 500ms)", ms(w.P95), ms(Threshold(base)), ms(base))
	}
	return ""
}

// Window is what one /fast window measured.
type Window struct {
	Sent, OK, Failed int
	P50, P95, Max    time.Duration
	// LagMax is how far behind its schedule the latest request started.
	LagMax     time.Duration
	FirstError string
}

// summarize reduces a window's rows (requests never sent are not
// counted: the window was interrupted).
func summarize(rows []recorder.Request) Window {
	var w Window
	var lat []float64
	for _, r := range rows {
		if r.NotSent() {
			continue
		}
		w.Sent++
		w.LagMax = max(w.LagMax, msDur(r.ScheduleLagMS))
		if r.Error != "" || r.Status < 200 || r.Status > 299 {
			w.Failed++
			if w.FirstError == "" {
				w.FirstError = cmp.Or(r.Error, fmt.Sprintf("status %d", r.Status))
			}
			continue
		}
		w.OK++
		lat = append(lat, r.LatencyMS)
	}
	if len(lat) > 0 {
		w.P50 = msDur(recorder.NearestRank(lat, 50))
		w.P95 = msDur(recorder.NearestRank(lat, 95))
		w.Max = msDur(slices.Max(lat))
	}
	return w
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", msf(d)) }

// run is one probe's run: its stack's targets, writers and clock.
type run struct {
	cfg   *Config
	env   *lab.Env
	probe Probe
	t     targets
	t0    time.Time
	reqs  *recorder.FileWriter[recorder.Request]
	meta  recorder.RunMeta
	// fastTimeout bounds each /fast request: twice the threshold, so a
	// slow request is measured, not only counted as failed.
	fastTimeout time.Duration
	// self measures the load generator (this process); guard is the
	// host-CPU guard; maxLag bounds a valid window's schedule lag.
	self   selfMeter
	guard  *hostguard.Guard
	maxLag time.Duration
	// died says which of a managed stack's processes died during the
	// probe (nil: not known, as on an external stack).
	died func() error
}

// windowFrom runs /fast open loop for the config's window, Offset from
// t0, and returns its summary; its rows go to requests.csv as run id id,
// their times from the window's start.
func (r *run) windowFrom(ctx context.Context, id string, clients int, t0 time.Time) (Window, error) {
	f := lab.FastSpec{Path: "/", Rate: r.cfg.FastRate, Duration: r.cfg.Window, Offset: r.cfg.Offset, Timeout: lab.Duration(r.fastTimeout)}
	meta := r.meta
	meta.RunID, meta.SlowClients = id, clients
	if r.t.h2 != nil {
		return r.fastH2(ctx, f, meta, t0)
	}
	got := f.Run(ctx, r.env, r.t.fast, r.t.allowRemote, meta, t0, r.reqs)
	return summarize(got.Reqs), got.WriteErr
}

// guarded runs window under the host-CPU guard and records the load
// generator's CPU and throttling over it in lv: the guard's reason when
// it saw the host busy meanwhile, else "". A level's window and the
// baseline's are judged alike (invalidWhy).
func (r *run) guarded(ctx context.Context, lv *Level, window func(ctx context.Context)) (busy string) {
	gctx, stopGuard := r.guard.Watch(ctx)
	defer stopGuard()
	before := r.self.read()
	window(gctx)
	generatorOver(lv, before, r.self.read())
	if errors.Is(context.Cause(gctx), hostguard.ErrHostBusy) {
		return r.guard.Why()
	}
	return ""
}

// interrupted is the Stopped of a probe that ctx's end stopped.
func interrupted(ctx context.Context) string { return "interrupted: " + context.Cause(ctx).Error() }

// hold is how long a level's clients keep the server busy at the most:
// through the window and the last /fast request's timeout.
func (r *run) hold() time.Duration {
	return time.Duration(r.cfg.Offset) + time.Duration(r.cfg.Window) + r.fastTimeout + time.Second
}

// streamSlack is how long past a held stream's wait its server may take
// to answer it and take the next request.
const streamSlack = 250 * time.Millisecond

// The statuses of a level (Level.Status).
const (
	statusHeld     = "held"
	statusDegraded = "degraded"
	statusShort    = "short"
	statusInvalid  = "invalid"
)

// slot is where a level runs. Of its clients, share are this process's;
// at, when not zero, is the instant they start on every shard of a
// sharded assessment, whose /fast window starts shardPlace after it
// (on time, placed or not); measure is false on a shard that holds
// clients only, which waits out the window instead; keep lets a
// connection or stalled-reader probe keep the level's clients past the
// window when it is the top level or degrades, to see whether and when
// the server ends them.
type slot struct {
	share   int
	at      time.Time
	measure bool
	keep    bool
}

// levelIn runs n clients of the probe in slot s beside a /fast window.
func (r *run) levelIn(ctx context.Context, n int, base time.Duration, last bool, s slot) (Level, error) {
	lv, hold := Level{Clients: n}, r.hold()
	if !s.at.IsZero() {
		sleepUntil(ctx, s.at)
		lv.LateMS = msf(max(time.Since(s.at), 0))
		share := s.share
		lv.ShardClients, hold = &share, r.cfg.clockHold()
	}
	lv.StartS = time.Since(r.t0).Seconds()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.probe.keeps() {
		hold = max(hold, time.Duration(r.cfg.IdleMax))
	}
	c := r.probe.start(cctx, r.t, s.share, hold)
	lv.Placed = r.place(ctx, c, hold, s)
	err := r.measured(ctx, &lv, base, c, s)
	// The level's instruments are read over the window: a kept level's
	// quiet tail would dilute its CPU and throttling.
	windowEnd := time.Now()
	lv.EndS = windowEnd.Sub(r.t0).Seconds()
	keep := r.probe.keeps() && s.keep && lv.Status != statusInvalid && (last || lv.Degraded != "")
	if !keep {
		cancel()
	}
	if keep && r.probe == ProbeStalled && lv.Degraded != "" {
		lv.FastBackS = r.backWhileHeld(cctx, base, c)
	}
	<-c.done
	if keep {
		kept := time.Since(windowEnd).Seconds()
		lv.KeptS = &kept
	}
	if r.probe == ProbeHeldStreams && s.share > 0 {
		// The server holds each stream for the wait it was asked, whether
		// its client is still there or not: the next level waits it out.
		sleepUntil(ctx, c.started.Add(streamWait(hold)+streamSlack))
	}
	c.outcomes(&lv)
	return lv, err
}

// place waits until c's clients are in place (or ended), hold passes, or,
// in a sharded slot, the window's start; whether they all were.
func (r *run) place(ctx context.Context, c *crowd, hold time.Duration, s slot) bool {
	placeBy := hold
	if !s.at.IsZero() {
		placeBy = time.Until(s.at.Add(shardPlace))
	}
	select {
	case <-c.inPlace:
		return true
	default:
	}
	timer := time.NewTimer(placeBy)
	defer timer.Stop()
	select {
	case <-c.inPlace:
		return true
	case <-c.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// measured runs the level's /fast window (or, on a shard that does not
// measure, waits it out) under the host-CPU guard, and judges it: its
// clients in place at its start, the load generator's CPU, throttling and
// lag over it, its status.
func (r *run) measured(ctx context.Context, lv *Level, base time.Duration, c *crowd, s slot) error {
	t0 := time.Now()
	if !s.at.IsZero() {
		t0 = s.at.Add(shardPlace)
		sleepUntil(ctx, t0)
	}
	// In place: connected and not ended when the window's first request
	// goes out, by when a server that accepts only to close has closed.
	var connected atomic.Int64
	connected.Store(-1)
	snap := time.AfterFunc(time.Until(t0.Add(time.Duration(r.cfg.Offset))), func() { connected.Store(int64(c.inPlaceNow())) })
	var w Window
	var err error
	busy := r.guarded(ctx, lv, func(gctx context.Context) {
		if s.measure {
			w, err = r.windowFrom(gctx, fmt.Sprintf("%s-%d", r.probe, lv.Clients), lv.Clients, t0)
		} else {
			sleepUntil(gctx, t0.Add(time.Duration(r.cfg.Offset+r.cfg.Window)+r.fastTimeout))
		}
	})
	if snap.Stop() || connected.Load() < 0 { // the window ended before its first request
		connected.Store(int64(c.inPlaceNow()))
	}
	lv.Connected = int(connected.Load())
	lv.FastSent, lv.FastOK, lv.FastFail = w.Sent, w.OK, w.Failed
	lv.P50MS, lv.P95MS, lv.MaxMS = msf(w.P50), msf(w.P95), msf(w.Max)
	lv.FastLagMaxMS, lv.FastTimeoutMS = msf(w.LagMax), msf(r.fastTimeout)
	lv.Invalid = invalidWhy(lv, r.maxLag, busy)
	switch {
	case lv.Invalid != "":
		lv.Status = statusInvalid
	case lv.Connected < s.share:
		lv.Status = statusShort
	case !s.measure:
	default:
		lv.Status = statusHeld
		if lv.Degraded = Degraded(base, w); lv.Degraded != "" {
			lv.Status = statusDegraded
		}
	}
	return err
}

// outcomes puts how c's clients ended, the first lines the server sent
// them and how long it held them on lv.
func (c *crowd) outcomes(lv *Level) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lv.Ends, lv.FirstLines = maps.Clone(c.ends), maps.Clone(c.firsts)
	if len(c.held) > 0 {
		held := slices.Sorted(slices.Values(c.held))
		p50, top := held[len(held)/2].Seconds(), held[len(held)-1].Seconds()
		lv.HeldP50S, lv.HeldMaxS = &p50, &top
	}
}

// backWhileHeld watches /fast while c's clients are held: how long until
// it came back under the threshold with every client still connected,
// nil if it did not before the first of them ended.
func (r *run) backWhileHeld(ctx context.Context, base time.Duration, c *crowd) *float64 {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.done:
		case <-c.anyEnded:
		case <-wctx.Done():
		}
		cancel()
	}()
	from := time.Now()
	if back, _ := r.recovered(wctx, base, time.Duration(r.cfg.IdleMax)); !back || wctx.Err() != nil {
		return nil
	}
	s := time.Since(from).Seconds()
	return &s
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// recovered waits until a /fast request comes back under the threshold
// again (the last level's clients are gone), one request at a time, for
// at most bound: whether it did and, when it did not, why the wait says
// nothing of the stack ("" when it does): this process's cgroup was
// throttled more than a valid window allows meanwhile, so the requests
// that were late may have been late here.
func (r *run) recovered(ctx context.Context, base, bound time.Duration) (back bool, instrument string) {
	return r.answersUnder(ctx, Threshold(base), bound)
}

// answersUnder is recovered with the latency a /fast request must come
// back under given.
func (r *run) answersUnder(ctx context.Context, limit, bound time.Duration) (back bool, instrument string) {
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: r.fastTimeout, AllowRemote: r.t.allowRemote})
	defer client.Close()
	before := r.self.read()
	end := time.Now().Add(bound)
	for time.Now().Before(end) && ctx.Err() == nil {
		var res loadgen.Result
		if r.t.h2 != nil { // the front speaks HTTP/2 only
			_, res.Latency, res.Err = r.t.h2.get(ctx, r.t.fast, r.fastTimeout)
			res.Status = http.StatusOK
		} else {
			client.Get(ctx, r.t.fast, &res)
		}
		if res.Err == nil && res.Status == http.StatusOK && res.Latency <= limit {
			return true, ""
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	var lv Level
	generatorOver(&lv, before, r.self.read())
	return false, invalidWhy(&lv, DefaultMaxLag, "")
}
