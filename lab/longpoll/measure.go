package longpoll

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/instrument"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// measure performs one run on a fresh stack: the instruments, the load
// generator, the run's figures (its group) and its verdict. Its error is
// only for results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *files) (RunRow, Group, error) {
	cond := spec.Cond
	srv, _ := stack.ParseServer(cond.Server)
	run := RunRow{RunID: id, Server: cond.Server, Hold: cond.Hold, ProbeConcurrency: cond.Probes, Rep: spec.Rep,
		StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	g := Group{RunID: id, Server: cond.Server, Hold: cond.Hold, ProbeConcurrency: cond.Probes,
		Seconds: time.Duration(c.Seconds).Seconds()}
	if n := srv.Slots(); n > 0 {
		g.Slots, g.FreeSlots, g.WorkerSlots = recorder.Some(float64(n)), recorder.Some(float64(n-cond.Hold)), recorder.Some(float64(n/srv.Workers))
	}
	fr, err := lab.StartFresh(ctx, env, stack.Deployment{RunID: id, Route: stack.RouteDirect, Server: srv}, true)
	if err != nil {
		return lab.Failed(ctx, run, err), g, nil
	}
	defer fr.Close()
	from := fileSize(f.probes.Name()) // where this run's probes begin
	m := c.probe(ctx, env, fr.Running, fr.In, id, cond, f)
	run.Probes = m.rows
	g.ElapsedS = m.elapsed.Seconds()
	g = m.probes.Group(g)
	if err := exactPercentiles(f.probes.Name(), from, id, &g); err != nil {
		m.writeErr = errors.Join(m.writeErr, err)
	}
	c.summarizeHeld(&g, m, cond, env)
	return run, g, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, m.writeErr, lab.Reason("load generator: ", m.loadErr))
}

// measured is what one run's load measured.
type measured struct {
	probes   ProbeSummary  // every probe, as written to probes.csv
	rows     int           // probe rows written
	writeErr error         // rows that could not be written
	loadErr  error         // why the load generator failed, if it did
	elapsed  time.Duration // the probing, from the window's start to the last probe's end
	held     heldStats
	issues   []time.Time // when the holders issued their long-polls
	t0       time.Time
}

// probe runs the run's load generator as a child in the load generator's
// cgroup (RunProbeLoop: the holders' long-polls and the closed-loop
// probes for the window) and writes each probe's row as its result line
// arrives, sampling the long-polls each worker holds meanwhile. This
// process, which samples and writes, stays out of the load generator's
// limits; a load generator killed for memory fails the run with that
// reason, every row it reported already written.
func (c *Config) probe(ctx context.Context, env *lab.Env, running *stack.Running, in *instrument.Instruments, id string, cond Condition, f *files) *measured {
	m := &measured{}
	lead, window := time.Duration(c.Lead), time.Duration(c.Seconds)
	loop := probeLoop{probeURL: running.Target(stack.TargetFast, c.ProbePath), holdURL: withWait(running.Target(stack.TargetLongPoll, "/longpoll"), time.Duration(c.Wait)),
		runID: id, workers: cond.Probes, holders: cond.Hold, lead: lead, window: window,
		timeout: time.Duration(c.Wait) + 30*time.Second, keepAlive: c.KeepAlive, allowRemote: running.AllowRemote()}
	var stopSampling func() heldStats
	var start time.Time
	// started is the child's start line: the holders are issued, the
	// window opens lead later.
	started := func(rest string) error {
		ns, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || !m.t0.IsZero() {
			return fmt.Errorf("start line %q: want one, with a time in Unix ns", rest)
		}
		m.t0, m.issues = time.Unix(0, ns), []time.Time{time.Unix(0, ns)}
		start = m.t0.Add(lead)
		in.Start(m.t0, f.resources, running.PIDs())
		if hc, ok := running.HeldCounter(); ok {
			srv, _ := stack.ParseServer(cond.Server)
			stopSampling = sampleHeld(ctx, hc, srv.Slots()/srv.Workers, start, start.Add(window))
		}
		return nil
	}
	var lastEnd time.Time
	loadErr := in.RunLoad(ctx, loop.args(), func(line string) error {
		if rest, ok := strings.CutPrefix(line, lineStart+" "); ok {
			return started(rest)
		}
		if m.t0.IsZero() {
			return fmt.Errorf("result line %q before the start line", line)
		}
		kind, r, err := loadgen.ParseResultLine(line)
		if err != nil {
			return err
		}
		switch kind {
		case lineProbe:
			env.Metrics.Observe(id, loadgen.RoleProbe, &r)
			m.record(env, f, id, cond, r)
			if end := r.Start.Add(r.Latency); end.After(lastEnd) {
				lastEnd = end
			}
		case lineHold:
			env.Metrics.Observe(id, loadgen.RoleLongPoll, &r)
			m.issues = append(m.issues, r.Start.Add(r.Latency))
		default:
			return fmt.Errorf("result line of unknown kind %q", kind)
		}
		return nil
	})
	// The probers issue until the window's end (each checks the clock
	// after its last probe returns), so the probing lasts the window at
	// least: the last probe's measured end can come before it by the time
	// a loaded machine takes to run the prober again (54 ms seen).
	m.elapsed = max(lastEnd.Sub(start), window)
	if lastEnd.IsZero() && !start.IsZero() {
		m.elapsed = max(0, time.Since(start))
	}
	if stopSampling != nil {
		m.held = stopSampling()
	}
	if _, _, err := in.Samples(); err != nil {
		m.writeErr = errors.Join(m.writeErr, err)
	}
	if ctx.Err() == nil {
		m.loadErr = loadErr
	}
	return m
}

// record writes one probe's row and adds it to the run's summary; the
// row is not kept.
func (m *measured) record(env *lab.Env, f *files, id string, cond Condition, r loadgen.Result) {
	row := Probe{RunID: id, Server: cond.Server, Hold: cond.Hold, ProbeConcurrency: cond.Probes, Worker: r.Worker, Seq: r.Seq,
		StartS: r.Start.Sub(m.t0).Seconds(), ConnectMS: ms(r.Connect), TTFBMS: ms(r.TTFB), LatencyMS: ms(r.Latency), Status: r.Status, Bytes: r.Bytes}
	if r.Err != nil {
		row.Error = r.Err.Error()
	}
	m.probes.Add(row)
	if err := f.probes.Write(row); err == nil {
		m.rows++
	} else if m.writeErr == nil {
		m.writeErr = err
	}
	env.RequestDone(id)
}

// summarizeHeld adds what sampling the held long-polls found.
func (c *Config) summarizeHeld(g *Group, m *measured, cond Condition, env *lab.Env) {
	hs := m.held
	g.HeldSamples = hs.samples
	if hs.failed > 0 {
		env.Logf("        held long-polls: %d of %d samples failed, last: %v", hs.failed, hs.failed+hs.samples, hs.lastErr)
	}
	if hs.samples == 0 {
		return
	}
	g.MaxWorkerHeld = recorder.Some(float64(hs.max))
	if !g.WorkerSlots.Valid { // no number of long-polls fills a worker
		return
	}
	g.FullWorkerS, g.FullSamples = recorder.Some(hs.full.Seconds()), recorder.Some(float64(len(hs.fullAt)))
	if cond.Hold == 0 {
		return
	}
	rel := func(ts []time.Time) []float64 {
		out := make([]float64, len(ts))
		for i, v := range ts {
			out[i] = v.Sub(m.t0).Seconds()
		}
		return out
	}
	// Waves count over the span the samples cover, not the probes' elapsed
	// time: probes stuck behind a full worker can end long after sampling
	// stopped, and a wave issued then could not have been seen full.
	span := rel([]time.Time{hs.first, hs.last})
	// Two waves of long-polls are a wait apart; holds issued together end
	// within a few milliseconds of each other.
	gap := min(time.Duration(c.Wait)/4, time.Second).Seconds()
	waves, full := CountWaves(rel(m.issues), rel(hs.fullAt), span[0], math.Nextafter(span[1], math.Inf(1)), gap)
	g.Waves, g.FullWaves = recorder.Some(float64(waves)), recorder.Some(float64(full))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// withWait adds the long-poll's wait to its URL: /longpoll?wait=25s.
func withWait(u string, wait time.Duration) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "wait=" + wait.String()
}
