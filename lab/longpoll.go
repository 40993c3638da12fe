package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// LongPollCondition is one cell of the long-poll experiment.
type LongPollCondition struct {
	Server ServerSpec `yaml:"server"`
	Hold   int        `yaml:"hold"`   // long-polls held open (N)
	Probes int        `yaml:"probes"` // closed-loop probe workers (C)
}

// LongPoll is the long-poll experiment (EXPERIMENTS.md section 2).
type LongPoll struct {
	Conditions []LongPollCondition
	Seconds    time.Duration // probing window (S)
	Wait       time.Duration // each long-poll's wait
	Lead       time.Duration // probes start this long after the holders
	ProbePath  string
	// Reps runs every condition this many times in a row (0 means 1): a
	// worker filling up with long-polls is a matter of chance at each
	// re-issue, so one run of a condition can miss it.
	Reps int
	// KeepAlive has holders and probes reuse their connections, as browsers
	// and API clients do; a kept-alive connection stays with the worker that
	// accepted it. Off: a new connection per request.
	KeepAlive bool
}

// DefaultLongPoll returns the published conditions: sync-2 holding 0 and 2
// with 20 probes; gthread 2x16 holding 0 and 20 with 20 and 8 probes.
func DefaultLongPoll() LongPoll {
	sync2 := ServerSpec{Model: "sync", Workers: 2, Threads: 1}
	gth := ServerSpec{Model: "gthread", Workers: 2, Threads: 16}
	return LongPoll{
		Conditions: []LongPollCondition{
			{sync2, 0, 20}, {sync2, 2, 20},
			{gth, 0, 20}, {gth, 20, 20}, {gth, 0, 8}, {gth, 20, 8},
		},
		Seconds:   60 * time.Second,
		Wait:      30 * time.Second,
		Lead:      2 * time.Second,
		ProbePath: "/fast",
	}
}

// Validate names the first field that cannot run.
func (e LongPoll) Validate() error {
	if len(e.Conditions) == 0 {
		return errors.New("conditions: none given")
	}
	for i, c := range e.Conditions {
		if _, err := ParseServer(c.Server.Name()); err != nil || c.Server.Model == "async" {
			return fmt.Errorf("conditions[%d].server %q: want sync-W or gthread-WxT", i, c.Server.Name())
		}
		if c.Hold < 0 || c.Hold > 10000 {
			return fmt.Errorf("conditions[%d].hold %d: allowed 0 to 10000", i, c.Hold)
		}
		if c.Probes < 1 || c.Probes > 10000 {
			return fmt.Errorf("conditions[%d].probes %d: allowed 1 to 10000", i, c.Probes)
		}
	}
	switch {
	case e.Seconds <= 0:
		return fmt.Errorf("seconds %s: must be more than 0", e.Seconds)
	case e.Wait <= 0 || e.Wait > 10*time.Minute:
		return fmt.Errorf("wait %s: allowed more than 0 up to 10m", e.Wait)
	case e.Lead < 0:
		return fmt.Errorf("lead %s: must be 0 or more", e.Lead)
	case e.Reps < 0 || e.Reps > 1000:
		return fmt.Errorf("reps %d: allowed 0 (once) to 1000", e.Reps)
	}
	return nil
}

// HeldCounter is a running stack that can tell how many long-polls each of
// its app workers holds now, by worker (its PID on Gunicorn, its index on
// the embedded target). The long-poll experiment samples it to find the
// per-worker shortage that the slot total hides.
type HeldCounter interface {
	LongPollsHeld(ctx context.Context) (map[string]int, error)
}

// heldEvery is how often the long-poll experiment samples held long-polls.
const heldEvery = 50 * time.Millisecond

// heldStats is what sampling a HeldCounter found.
type heldStats struct {
	samples, failed int
	max             int           // most long-polls one worker held
	full            time.Duration // time some worker had every thread holding one
	lastErr         error
}

// sampleHeld samples hc every heldEvery from start to end (the probing
// window) or until stop is called, which returns the statistics.
func sampleHeld(ctx context.Context, hc HeldCounter, threads int, start, end time.Time) (stop func() heldStats) {
	done := make(chan struct{})
	result := make(chan heldStats, 1)
	go func() {
		var st heldStats
		defer func() { result <- st }()
		select {
		case <-time.After(time.Until(start)):
		case <-done:
			return
		case <-ctx.Done():
			return
		}
		tick := time.NewTicker(heldEvery)
		defer tick.Stop()
		prev := time.Now()
		for {
			held, err := hc.LongPollsHeld(ctx)
			now := time.Now()
			if now.After(end) {
				return
			}
			if err != nil {
				st.failed++
				st.lastErr = err
			} else {
				st.samples++
				most := 0
				for _, n := range held {
					most = max(most, n)
				}
				st.max = max(st.max, most)
				if most >= threads {
					st.full += min(now.Sub(prev), 2*heldEvery)
				}
			}
			prev = now
			select {
			case <-tick.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() heldStats {
		close(done)
		return <-result
	}
}

// LongPollResult is what RunLongPoll wrote.
type LongPollResult struct {
	Dir    string
	Groups []recorder.LongPollGroup
}

// RunLongPoll runs every condition Reps times, each on a fresh stack (direct
// route), and writes probes.csv, groups.csv (a row per run) and
// environment.json. Cancelling ctx keeps what was measured and returns
// ctx's error.
func RunLongPoll(ctx context.Context, e LongPoll, o Options) (*LongPollResult, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if err := os.MkdirAll(filepath.Join(o.Out, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	if err := writeEnvironment(o.Out, "long-poll", o); err != nil {
		return nil, err
	}
	probes, err := recorder.CreateFile[recorder.Probe](o.Out)
	if err != nil {
		return nil, err
	}
	defer probes.Close()
	groups, err := recorder.CreateFile[recorder.LongPollGroup](o.Out)
	if err != nil {
		return nil, err
	}
	defer groups.Close()

	res := &LongPollResult{Dir: o.Out}
	reps := max(e.Reps, 1)
	p := newProgress(o.Progress, len(e.Conditions)*reps, func(int) time.Duration { return e.Lead + e.Seconds })
	var runErr error
	for i := range len(e.Conditions) * reps {
		c := e.Conditions[i/reps]
		id := fmt.Sprintf("%s.hold%d.probes%d.rep%d", c.Server.Name(), c.Hold, c.Probes, i%reps+1)
		p.start(i, id)
		g, err := e.runOne(ctx, id, c, o, probes)
		if err == nil {
			err = groups.Write(g)
		}
		res.Groups = append(res.Groups, g)
		p.spentIntr += p.intrinsic(i)
		fmt.Fprintf(o.Progress, "        probes ok %d failed %d, p50 %s ms, p95 %s ms, max %s ms, %.1f req/s; slots %d, free %d; most held on one worker %s of %d threads, full %s s\n",
			g.OK, g.Failed, num(g.P50MS, 1), num(g.P95MS, 1), num(g.MaxMS, 1), g.ThroughputRPS, g.Slots, g.FreeSlots,
			num(g.MaxWorkerHeld, 0), max(c.Server.Threads, 1), num(g.FullWorkerS, 1))
		if err != nil || ctx.Err() != nil {
			runErr = err
			if runErr == nil {
				runErr = ctx.Err()
			}
			break
		}
	}
	return res, errors.Join(runErr, probes.Close(), groups.Close())
}

func (e LongPoll) runOne(ctx context.Context, id string, c LongPollCondition, o Options, w *recorder.FileWriter[recorder.Probe]) (recorder.LongPollGroup, error) {
	g := recorder.LongPollGroup{RunID: id, Server: c.Server.Name(), Hold: c.Hold, ProbeConcurrency: c.Probes,
		Seconds: e.Seconds.Seconds(), Slots: c.Server.Workers * max(c.Server.Threads, 1)}
	g.FreeSlots = g.Slots - g.Hold
	work, err := os.MkdirTemp("", "slowlab-run-")
	if err != nil {
		return g, err
	}
	defer os.RemoveAll(work)
	running, err := o.Stack.Start(ctx, Deployment{RunID: id, Route: RouteDirect, Server: c.Server, LargeSize: 0,
		LogDir: filepath.Join(o.Out, "logs"), WorkDir: work})
	if err != nil {
		return g, fmt.Errorf("%s: start stack: %w", id, err)
	}
	defer running.Stop()

	holdCtx, stopHolding := context.WithCancel(ctx)
	defer stopHolding()
	holdClient := loadgen.NewClient(loadgen.ClientOptions{Timeout: e.Wait + 30*time.Second, KeepAlive: e.KeepAlive, TracerProvider: o.TracerProvider})
	defer holdClient.Close()
	holders := loadgen.Holders{Client: holdClient, URL: running.URL() + "/longpoll?wait=" + e.Wait.String(), N: c.Hold, RunID: id, Metrics: o.Metrics}
	held := make(chan struct{})
	go func() {
		defer close(held)
		holders.Run(holdCtx)
	}()

	t0 := time.Now()
	probeClient := loadgen.NewClient(loadgen.ClientOptions{Timeout: e.Wait + 30*time.Second, KeepAlive: e.KeepAlive, TracerProvider: o.TracerProvider})
	defer probeClient.Close()
	var writeErr error
	var rows []recorder.Probe
	loop := loadgen.ClosedLoop{Client: probeClient, URL: running.URL() + e.ProbePath, Workers: c.Probes,
		Start: t0.Add(e.Lead), Duration: e.Seconds, RunID: id, Metrics: o.Metrics,
		OnResult: func(r loadgen.Result) {
			row := recorder.Probe{RunID: id, Server: g.Server, Hold: c.Hold, ProbeConcurrency: c.Probes, Worker: r.Worker, Seq: r.Seq,
				StartS: r.Start.Sub(t0).Seconds(), ConnectMS: ms(r.Connect), TTFBMS: ms(r.TTFB), LatencyMS: ms(r.Latency), Status: r.Status, Bytes: r.Bytes}
			if r.Err != nil {
				row.Error = r.Err.Error()
			}
			rows = append(rows, row)
			if err := w.Write(row); err != nil && writeErr == nil {
				writeErr = err
			}
		}}
	var stopSampling func() heldStats
	if hc, ok := running.(HeldCounter); ok {
		stopSampling = sampleHeld(ctx, hc, max(c.Server.Threads, 1), t0.Add(e.Lead), t0.Add(e.Lead+e.Seconds))
	}
	loop.Run(ctx)
	var hs heldStats
	if stopSampling != nil {
		hs = stopSampling()
	}
	stopHolding()
	<-held
	if err := running.Failed(); err != nil && ctx.Err() == nil {
		writeErr = errors.Join(writeErr, fmt.Errorf("%s: %w", id, err))
	}
	g = recorder.SummarizeProbes(g, rows)
	if hs.samples > 0 {
		g.MaxWorkerHeld, g.FullWorkerS = recorder.Some(float64(hs.max)), recorder.Some(hs.full.Seconds())
	}
	if hs.failed > 0 {
		fmt.Fprintf(o.Progress, "        held long-polls: %d of %d samples failed, last: %v\n", hs.failed, hs.failed+hs.samples, hs.lastErr)
	}
	return g, writeErr
}

// PrintLongPoll writes the groups table as aligned text.
func PrintLongPoll(w io.Writer, groups []recorder.LongPollGroup) {
	fmt.Fprintf(w, "%-14s %5s %7s %7s %7s %10s %10s %10s %9s %6s %5s %11s %8s %7s\n", "server", "hold", "probes", "ok", "failed",
		"p50_ms", "p95_ms", "max_ms", "req/s", "slots", "free", "worker_held", "full_s", ">1s")
	for _, g := range groups {
		fmt.Fprintf(w, "%-14s %5d %7d %7d %7d %10s %10s %10s %9.1f %6d %5d %11s %8s %7d\n", g.Server, g.Hold, g.ProbeConcurrency, g.OK, g.Failed,
			num(g.P50MS, 1), num(g.P95MS, 1), num(g.MaxMS, 1), g.ThroughputRPS, g.Slots, g.FreeSlots,
			num(g.MaxWorkerHeld, 0), num(g.FullWorkerS, 1), g.ProbesOver1s)
	}
	fmt.Fprintln(w, "worker_held: most long-polls one worker held at once; full_s: seconds some worker had every thread holding one")
	fmt.Fprintln(w, "(with Gunicorn's accept policy, a request it accepted then waited for a long-poll to end); >1s: probes over 1 s")
}
