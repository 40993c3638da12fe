package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// shortLongPoll is the long-poll experiment with a short wait and window:
// the published conditions (or the given ones) with the same arithmetic.
func shortLongPoll(conds ...lab.LongPollCondition) lab.LongPoll {
	e := lab.DefaultLongPoll()
	e.Wait, e.Seconds, e.Lead = 3*time.Second, 4*time.Second, time.Second
	if len(conds) > 0 {
		e.Conditions = conds
	}
	return e
}

var (
	sync2      = lab.ServerSpec{Model: "sync", Workers: 2, Threads: 1}
	gthread216 = lab.ServerSpec{Model: "gthread", Workers: 2, Threads: 16}
)

// runLongPoll runs e on st and returns its groups by server/hold/probes,
// after checking groups.csv and probes.csv agree with them.
func runLongPoll(t *testing.T, e lab.LongPoll, st lab.Stack) map[string]recorder.LongPollGroup {
	t.Helper()
	out := t.TempDir()
	res, err := lab.RunLongPoll(context.Background(), e, lab.Options{Out: out, Stack: st, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]recorder.LongPollGroup{}
	for i, g := range res.Groups {
		reps := max(e.Reps, 1)
		c := e.Conditions[i/reps]
		if want := fmt.Sprintf("%s.hold%d.probes%d.rep%d", c.Server.Name(), c.Hold, c.Probes, i%reps+1); g.RunID != want {
			t.Errorf("run %d: run_id %q, want %q", i, g.RunID, want)
		}
		got[g.Server+"/"+itoa(g.Hold)+"/"+itoa(g.ProbeConcurrency)] = g
		if g.Failed != 0 {
			t.Errorf("%s: %d failed probes", g.Server+"/"+itoa(g.Hold)+"/"+itoa(g.ProbeConcurrency), g.Failed)
		}
	}
	groups, err := recorder.ReadFile[recorder.LongPollGroup](filepath.Join(out, "groups.csv"))
	if err != nil || len(groups) != len(e.Conditions)*max(e.Reps, 1) {
		t.Fatalf("groups.csv: %d rows, %v", len(groups), err)
	}
	probes, err := recorder.ReadFile[recorder.Probe](filepath.Join(out, "probes.csv"))
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
	return got
}

// checkSlotRule asserts what the long-poll experiment shows on any stack
// with Gunicorn's accept policy, and that every probe slower than a second
// is explained by a worker whose every thread held a long-poll:
//   - sync-2 holding 2 starves every probe (p50 a large part of the wait,
//     throughput collapses);
//   - gthread 2x16 holding 20 keeps p95 near baseline with 8 and 20 probes;
//   - a probe over 1 s happens only while some worker is full.
func checkSlotRule(t *testing.T, e lab.LongPoll, got map[string]recorder.LongPollGroup) {
	t.Helper()
	wait := float64(e.Wait.Milliseconds())
	base, held := got["sync-2/0/20"], got["sync-2/2/20"]
	if held.P50MS.Value < wait/3 {
		t.Errorf("sync-2 holding 2: probe p50 %.0f ms, want >= %.0f (every probe waits behind a long-poll)", held.P50MS.Value, wait/3)
	}
	if held.ThroughputRPS > base.ThroughputRPS/20 {
		t.Errorf("sync-2 throughput %.1f/s holding 2 vs %.1f/s holding 0: want a collapse", held.ThroughputRPS, base.ThroughputRPS)
	}
	if !held.MaxWorkerHeld.Valid || held.MaxWorkerHeld.Value != 1 || held.FullWorkerS.Value < e.Seconds.Seconds()/2 {
		t.Errorf("sync-2 holding 2: busiest worker held %v for %v s, want 1 (its only slot) for most of the window", held.MaxWorkerHeld, held.FullWorkerS)
	}
	for _, probes := range []int{8, 20} {
		g := got[fmt.Sprintf("gthread-2x16/20/%d", probes)]
		if g.OK == 0 || g.P95MS.Value >= 1000 || g.FreeSlots != 12 || g.Slots != 32 {
			t.Errorf("gthread-2x16 holding 20 with %d probes: ok %d, p95 %.0f ms, slots %d, free %d; want p95 < 1000, 32 slots, 12 free",
				probes, g.OK, g.P95MS.Value, g.Slots, g.FreeSlots)
		}
	}
	for key, g := range got {
		if !g.MaxWorkerHeld.Valid {
			t.Errorf("%s: held long-polls per worker not measured", key)
			continue
		}
		if g.ProbesOver1s > 0 && g.FullWorkerS.Value == 0 {
			t.Errorf("%s: %d probes over 1 s (max %.0f ms) while no worker had every thread holding a long-poll (busiest held %.0f)",
				key, g.ProbesOver1s, g.MaxMS.Value, g.MaxWorkerHeld.Value)
		}
		if g.Hold == 0 && (g.MaxWorkerHeld.Value != 0 || g.ProbesOver1s != 0) {
			t.Errorf("%s: nothing held, yet busiest worker held %.0f and %d probes took over 1 s", key, g.MaxWorkerHeld.Value, g.ProbesOver1s)
		}
	}
}

// checkFullWorker asserts the per-worker rule where pigeonhole forces it:
// 31 long-polls on 2 workers x 16 threads leave a worker with every thread
// held. With Gunicorn's accept policy it still accepts probes, which wait
// for a long-poll to end although a slot is free elsewhere; a worker that
// accepts only with a free thread leaves them to the other.
func checkFullWorker(t *testing.T, e lab.LongPoll, g recorder.LongPollGroup, acceptWhenFree bool) {
	t.Helper()
	if g.MaxWorkerHeld.Value != 16 || g.FullWorkerS.Value < e.Seconds.Seconds()/2 {
		t.Errorf("gthread-2x16 holding 31: busiest worker held %v for %v s; want 16 (all its threads) for most of the window", g.MaxWorkerHeld, g.FullWorkerS)
	}
	if acceptWhenFree {
		if g.MaxMS.Value >= 1000 || g.ProbesOver1s != 0 {
			t.Errorf("accepting only with a free thread, holding 31 (1 free slot): max %.0f ms, %d probes over 1 s; want none", g.MaxMS.Value, g.ProbesOver1s)
		}
		return
	}
	if g.MaxMS.Value < float64(e.Wait.Milliseconds())/3 || g.ProbesOver1s == 0 {
		t.Errorf("Gunicorn's accept policy, holding 31 (1 free slot): max %.0f ms, %d probes over 1 s; want probes stuck behind the full worker's long-polls",
			g.MaxMS.Value, g.ProbesOver1s)
	}
}

// TestLongPollShape runs the published long-poll conditions, plus the
// pigeonhole condition, on the embedded stack with both accept policies.
func TestLongPollShape(t *testing.T) {
	e := shortLongPoll()
	e.Conditions = append(e.Conditions, lab.LongPollCondition{Server: gthread216, Hold: 31, Probes: 8})
	got := runLongPoll(t, e, lab.Embedded{})
	checkSlotRule(t, e, got)
	checkFullWorker(t, e, got["gthread-2x16/31/8"], false)

	// Two runs, so the repetitions' run ids and rows are checked too.
	free := shortLongPoll(lab.LongPollCondition{Server: gthread216, Hold: 31, Probes: 8})
	free.Reps = 2
	checkFullWorker(t, free, runLongPoll(t, free, lab.Embedded{AcceptWhenFree: true})["gthread-2x16/31/8"], true)
}

// TestLongPollRealGunicorn runs the same conditions on real Gunicorn (no
// cgroup limits, as reproduce long-poll), its workers reporting their held
// long-polls through app.py's files.
func TestLongPollRealGunicorn(t *testing.T) {
	requireTool(t, "gunicorn")
	requireTool(t, "nginx")
	t.Cleanup(func() { assertNothingLeft(t) })
	e := shortLongPoll()
	e.Conditions = append(e.Conditions, lab.LongPollCondition{Server: gthread216, Hold: 31, Probes: 8})
	got := runLongPoll(t, e, lab.GunicornNginx{})
	checkSlotRule(t, e, got)
	checkFullWorker(t, e, got["gthread-2x16/31/8"], false)
}

func itoa(i int) string { return fmt.Sprint(i) }
