package longpoll

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// testEnv is slowlabtest.Env with the accept policy of gthread workers.
func testEnv(t *testing.T, stackName string, acceptWhenFree bool) *lab.Env {
	t.Helper()
	env := labtest.Env(t, stackName)
	env.Stack.Settings.AcceptWhenFree = acceptWhenFree
	return env
}

// short is the long-poll experiment with a short wait and window: the
// published conditions (or the given ones) with the same arithmetic.
func short(conds ...Condition) *Config {
	c := Published()
	c.Wait, c.Seconds, c.Lead = lab.Duration(3*time.Second), lab.Duration(4*time.Second), lab.Duration(time.Second)
	if len(conds) > 0 {
		c.Conditions = conds
	}
	return c
}

// lpRun is one run's group with what its probes in probes.csv show.
type lpRun struct {
	Group
	// StuckClients counts the distinct probe clients (probes.csv's
	// worker) that had a probe over 1 s.
	StuckClients int
}

// runLongPoll runs c in env and returns its groups by server/hold/probes,
// after checking groups.csv and probes.csv agree with them.
func runLongPoll(t *testing.T, c *Config, env *lab.Env) map[string]lpRun {
	t.Helper()
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	res := r.(*Result)
	got := map[string]lpRun{}
	for i, g := range res.Groups {
		cond := c.Conditions[i/c.Reps]
		if want := cond.RunID(i%c.Reps + 1); g.RunID != want {
			t.Errorf("run %d: run_id %q, want %q", i, g.RunID, want)
		}
		key := g.Server + "/" + itoa(g.Hold) + "/" + itoa(g.ProbeConcurrency)
		got[key] = lpRun{Group: g}
		if g.Failed != 0 {
			t.Errorf("%s: %d failed probes", key, g.Failed)
		}
		// The probing lasts the window, and past it by at most the
		// slowest probe (and a loaded machine's half second).
		if !(g.ElapsedS >= g.Seconds) || g.ElapsedS > g.Seconds+g.MaxMS.Value/1000+0.5 || g.ThroughputRPS != float64(g.OK)/g.ElapsedS {
			t.Errorf("%s: elapsed %.3f s for a %.3f s window (slowest probe %.0f ms), throughput %.3f for %d ok: want the window to its last probe, and over that time",
				key, g.ElapsedS, g.Seconds, g.MaxMS.Value, g.ThroughputRPS, g.OK)
		}
	}
	groups, err := recorder.ReadFile[Group](filepath.Join(env.Out, "groups.csv"))
	if err != nil || len(groups) != len(c.Conditions)*c.Reps {
		t.Fatalf("groups.csv: %d rows, %v", len(groups), err)
	}
	probes, err := recorder.ReadFile[Probe](filepath.Join(env.Out, "probes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, g := range groups {
		total += g.OK + g.Failed
	}
	if len(probes) != total {
		t.Errorf("probes.csv has %d rows, groups count %d", len(probes), total)
	}
	stuck := map[string]map[int]bool{}
	for _, p := range probes {
		if p.Error == "" && p.Status >= 200 && p.Status < 400 && p.LatencyMS > 1000 { // as ProbeSummary counts probes_over_1s
			if stuck[p.RunID] == nil {
				stuck[p.RunID] = map[int]bool{}
			}
			stuck[p.RunID][p.Worker] = true
		}
	}
	for key, r := range got {
		r.StuckClients = len(stuck[r.RunID])
		got[key] = r
	}
	samples, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(env.Out, "resource-samples.csv"))
	if err != nil || len(samples) == 0 {
		t.Errorf("resource-samples.csv: %d rows, %v", len(samples), err)
	}
	return got
}

func itoa(i int) string { return strconv.Itoa(i) }

// checkSlotRule asserts what the long-poll experiment shows on any stack
// with Gunicorn's accept policy, and that every probe slower than a second
// is explained by a worker whose every thread held a long-poll:
//   - sync-2 holding 2 starves every probe (p50 a large part of the wait,
//     throughput collapses);
//   - gthread 2x16 holding 20 keeps p95 near baseline with 8 and 20 probes;
//   - a probe over 1 s happens only while some worker is full.
func checkSlotRule(t testing.TB, e *Config, got map[string]lpRun) {
	t.Helper()
	wait := float64(time.Duration(e.Wait).Milliseconds())
	base, held := got["sync-2/0/20"], got["sync-2/2/20"]
	// Every probe client waits behind a long-poll: its first request at
	// least (the 20 arrive while both workers hold one). The median is no
	// rule: between one long-poll's 204 and the holder's next request the
	// 20 closed-loop probes get many fast answers, more the longer a loaded
	// machine makes that gap (a fresh-clone run saw p50 13 ms, p95 2990).
	t.Logf("sync-2 holding 2: %d of the %d probe clients had a probe over 1 s (%d probes); a worker full in %.0f of %d samples (%.2f s)",
		held.StuckClients, held.ProbeConcurrency, held.ProbesOver1s, held.FullSamples.Value, held.HeldSamples, held.FullWorkerS.Value)
	if held.StuckClients < held.ProbeConcurrency || held.P95MS.Value < wait/3 {
		t.Errorf("sync-2 holding 2: %d of the %d probe clients had a probe over 1 s (%d probes), p95 %.0f ms; want every client stuck and p95 >= %.0f",
			held.StuckClients, held.ProbeConcurrency, held.ProbesOver1s, held.P95MS.Value, wait/3)
	}
	if held.ThroughputRPS > base.ThroughputRPS/20 {
		t.Errorf("sync-2 throughput %.1f/s holding 2 vs %.1f/s holding 0: want a collapse", held.ThroughputRPS, base.ThroughputRPS)
	}
	// Full counted in samples, as checkFullWorker does (a run that sampled
	// the worker full for 1.90 s of 4 failed the half window in seconds).
	if !held.MaxWorkerHeld.Valid || held.MaxWorkerHeld.Value != 1 || !fullMostSamples(held.Group) {
		t.Errorf("sync-2 holding 2: busiest worker held %v, full in %v of %d samples (%v s); want 1 (its only slot), full in at least half of 10 or more samples",
			held.MaxWorkerHeld, held.FullSamples, held.HeldSamples, held.FullWorkerS)
	}
	// 20 long-polls fit the 32 slots, but Gunicorn's policy may put 16 of
	// them on one worker (the README measures it in about 1 run in 5 with
	// 8 probes): p95 stays under 1 s only while no worker is full, and a
	// full worker is logged, not failed (a stress run caught one).
	for _, probes := range []int{8, 20} {
		g := got[fmt.Sprintf("gthread-2x16/20/%d", probes)]
		if g.OK == 0 || g.FreeSlots != recorder.Some(12) || g.Slots != recorder.Some(32) || g.WorkerSlots != recorder.Some(16) {
			t.Errorf("gthread-2x16 holding 20 with %d probes: ok %d, slots %v, free %v, per worker %v; want 32 slots, 12 free, 16 per worker",
				probes, g.OK, g.Slots, g.FreeSlots, g.WorkerSlots)
		}
		switch {
		case g.FullWorkerS.Value == 0 && g.P95MS.Value >= queueBoundMS(g.Group):
			t.Errorf("gthread-2x16 holding 20 with %d probes: p95 %.0f ms though no worker was full; want < %.0f (%s)", probes, g.P95MS.Value, queueBoundMS(g.Group), queueBoundWhy(g.Group))
		case g.FullWorkerS.Value > 0:
			t.Logf("gthread-2x16 holding 20 with %d probes: a worker held %.0f long-polls for %.1f s, p95 %.0f ms (the busiest worker, not the slot total)",
				probes, g.MaxWorkerHeld.Value, g.FullWorkerS.Value, g.P95MS.Value)
		}
	}
	for key, g := range got {
		if !g.MaxWorkerHeld.Valid {
			t.Errorf("%s: held long-polls per worker not measured", key)
			continue
		}
		if g.MaxMS.Value >= queueBoundMS(g.Group) && g.FullWorkerS.Value == 0 {
			t.Errorf("%s: %d probes over 1 s (max %.0f ms, want < %.0f: %s) while no worker had every thread holding a long-poll (busiest held %.0f)",
				key, g.ProbesOver1s, g.MaxMS.Value, queueBoundMS(g.Group), queueBoundWhy(g.Group), g.MaxWorkerHeld.Value)
		}
		if g.Hold == 0 && (g.MaxWorkerHeld.Value != 0 || g.ProbesOver1s != 0) {
			t.Errorf("%s: nothing held, yet busiest worker held %.0f and %d probes took over 1 s", key, g.MaxWorkerHeld.Value, g.ProbesOver1s)
		}
	}
}

// queueBoundMS is how long a probe may take while no worker is full: 1 s
// (a probe behind a long-poll waits for it to end), or on a machine where
// the app's CPU quota alone queues probes that long, three times the mean
// wait the closed loop's own throughput implies (Little's law: probes in
// flight / completions per second). A CI run measured gthread-2x16 at
// 37 req/s with 20 probes, 0.54 s each on average, p95 1001 ms, max 1124
// ms and no worker full; on a quiet machine the bound is 1 s.
func queueBoundMS(g Group) float64 {
	if g.ThroughputRPS <= 0 {
		return 1000
	}
	return max(1000, 3*1000*float64(g.ProbeConcurrency)/g.ThroughputRPS)
}

func queueBoundWhy(g Group) string {
	return fmt.Sprintf("1 s, or 3x the %d probes' mean of %.0f ms at %.1f req/s", g.ProbeConcurrency, 1000*float64(g.ProbeConcurrency)/max(g.ThroughputRPS, 1e-9), g.ThroughputRPS)
}

// checkFullWorker asserts the per-worker rule where pigeonhole forces it:
// 31 long-polls on 2 workers x 16 threads leave a worker with every thread
// held whenever all 31 are held, that is but for the moments a holder
// re-issues one. With Gunicorn's accept policy it still accepts probes,
// which wait for a long-poll to end although a slot is free elsewhere; a
// worker that accepts only with a free thread leaves them to the other.
func checkFullWorker(t testing.TB, e *Config, g Group, acceptWhenFree bool) {
	t.Helper()
	// Counted in samples, not seconds: full_worker_s adds at most two
	// sampling intervals a sample, so a machine too loaded to sample on
	// time shortens it (3.1 and 1.4 s of a 4 s window were seen), while
	// the share of the samples that found a worker full stays what the
	// pigeonhole makes it.
	t.Logf("gthread-2x16 holding 31: busiest worker held %.0f, full in %.0f of %d samples (%.2f s)", g.MaxWorkerHeld.Value, g.FullSamples.Value, g.HeldSamples, g.FullWorkerS.Value)
	if g.MaxWorkerHeld.Value != 16 || !fullMostSamples(g) {
		t.Errorf("gthread-2x16 holding 31: busiest worker held %v, full in %v of %d samples (%v s); want 16 (all its threads), full in at least half of 10 or more samples",
			g.MaxWorkerHeld, g.FullSamples, g.HeldSamples, g.FullWorkerS)
	}
	if acceptWhenFree {
		if g.MaxMS.Value >= 1000 || g.ProbesOver1s != 0 {
			t.Errorf("accepting only with a free thread, holding 31 (1 free slot): max %.0f ms, %d probes over 1 s; want none", g.MaxMS.Value, g.ProbesOver1s)
		}
		return
	}
	if g.MaxMS.Value < float64(time.Duration(e.Wait).Milliseconds())/3 || g.ProbesOver1s == 0 {
		t.Errorf("Gunicorn's accept policy, holding 31 (1 free slot): max %.0f ms, %d probes over 1 s; want probes stuck behind the full worker's long-polls",
			g.MaxMS.Value, g.ProbesOver1s)
	}
}

// fullMostSamples: 10 or more held samples, at least half of which found
// some worker full.
func fullMostSamples(g Group) bool {
	return g.HeldSamples >= 10 && g.FullSamples.Valid && g.FullSamples.Value >= float64(g.HeldSamples)/2
}

// TestLongPollShape runs the published long-poll conditions, plus the
// pigeonhole condition, on the embedded stack with both accept policies.
func TestLongPollShape(t *testing.T) {
	slowlabtest.Timing(t)
	c := short()
	c.Conditions = append(c.Conditions, Condition{"gthread-2x16", 31, 8})
	got := runLongPoll(t, c, testEnv(t, stack.NameEmbedded, false))
	checkSlotRule(t, c, got)
	checkFullWorker(t, c, got["gthread-2x16/31/8"].Group, false)

	// One run: a second repetition of the same condition was checked only
	// as the first (checkFullWorker reads the last), and the repetitions'
	// run ids and rows are TestResumeAfterInterrupt's (two runs of one
	// condition, each run's groups.csv, probes.csv and runs rows).
	free := short(Condition{"gthread-2x16", 31, 8})
	checkFullWorker(t, free, runLongPoll(t, free, testEnv(t, stack.NameEmbedded, true))["gthread-2x16/31/8"].Group, true)
}

// TestLongPollRealGunicorn runs the same conditions on real Gunicorn under
// the published cgroup limits, as reproduce long-poll does, its workers
// reporting their held long-polls through app.py's files.
func TestLongPollRealGunicorn(t *testing.T) {
	slowlabtest.Timing(t)
	env := testEnv(t, stack.NameReal, false)
	// The published conditions less gthread-2x16's two without long-polls
	// (the embedded shape runs those): what the slot rule compares.
	c := short(Condition{"sync-2", 0, 20}, Condition{"sync-2", 2, 20}, Condition{"gthread-2x16", 20, 20},
		Condition{"gthread-2x16", 20, 8}, Condition{"gthread-2x16", 31, 8})
	got := runLongPoll(t, c, env)
	checkSlotRule(t, c, got)
	checkFullWorker(t, c, got["gthread-2x16/31/8"].Group, false)
	b, _ := os.ReadFile(filepath.Join(env.Out, "environment.json"))
	if !strings.Contains(string(b), "app 0.25 CPU / 128 MiB") {
		t.Errorf("environment.json does not record the app's limits:\n%s", b)
	}
}

// The wave count follows the holders' re-issues: with a 1 s wait over a
// 4 s window there are about 4 waves.
func TestLongPollWaves(t *testing.T) {
	slowlabtest.Timing(t)
	c := short(Condition{"gthread-2x16", 20, 4})
	c.Wait = lab.Duration(time.Second)
	got := runLongPoll(t, c, testEnv(t, stack.NameEmbedded, false))
	g := got["gthread-2x16/20/4"]
	if !g.Waves.Valid || g.Waves.Value < 3 || g.Waves.Value > 7 || !g.FullWaves.Valid || g.FullWaves.Value > g.Waves.Value {
		t.Errorf("waves %v, full %v over %.1f s with a 1 s wait; want about 4-5", g.Waves, g.FullWaves, g.ElapsedS)
	}
	if g.HeldSamples < 10 {
		t.Errorf("%d held samples over %.1f s", g.HeldSamples, g.ElapsedS)
	}
}

var _ = fmt.Sprint
