package longpoll

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// tiny is one sync-2 condition holding one long-poll against 2 probes,
// twice, with a 1 s wait and a 1 s window that opens at once.
func tiny() *Config {
	c := short(Condition{Server: "sync-2", Hold: 1, Probes: 2})
	c.Seconds, c.Wait, c.Lead, c.Reps = lab.Duration(time.Second), lab.Duration(time.Second), 0, 2
	return c
}

// probesPerRun counts probes.csv's rows by run id; a probe (run, worker,
// seq) written twice fails the test.
func probesPerRun(t *testing.T, dir string) map[string]int {
	t.Helper()
	rows, err := recorder.ReadFile[Probe](filepath.Join(dir, probeFile))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		run         string
		worker, seq int
	}
	seen := map[key]bool{}
	n := map[string]int{}
	for _, p := range rows {
		k := key{p.RunID, p.Worker, p.Seq}
		if seen[k] {
			t.Errorf("probe %+v is in probes.csv twice", k)
		}
		seen[k] = true
		n[p.RunID]++
	}
	return n
}

// runIDs are the run ids of dir's file of T, in order.
func runIDs[T recorder.Row[T]](t *testing.T, dir string, id func(T) string) []string {
	t.Helper()
	rows, err := recorder.ReadFile[T](filepath.Join(dir, recorder.FileName[T]()))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, id(r))
	}
	return ids
}

func groupID(g Group) string { return g.RunID }

func readRuns(t *testing.T, dir string) []RunRow {
	t.Helper()
	runs, err := recorder.ReadFile[RunRow](filepath.Join(dir, runFile))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// An interrupted session resumed with --resume keeps its completed run,
// drops the partial run's rows and runs it again: every run id ends up
// with its probes exactly once, groups.csv and the summary have both runs.
// Resuming with other settings is refused, naming the field, and changes
// nothing.
func TestResumeAfterInterrupt(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	rep1, rep2 := c.Conditions[0].RunID(1), c.Conditions[0].RunID(2)
	env := testEnv(t, stack.NameEmbedded, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted after 3 probes of the second run were measured.
	seen := 0
	env.OnRequest = func(id string) {
		if id == rep2 {
			if seen++; seen == 3 {
				cancel()
			}
		}
	}
	if _, err := c.Run(ctx, env); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted session: error %v, want context.Canceled", err)
	}
	before := probesPerRun(t, env.Out)
	if before[rep1] == 0 || before[rep2] < 3 || len(before) != 2 {
		t.Fatalf("probes per run before resume: %v", before)
	}
	if ids := runIDs(t, env.Out, groupID); !slices.Equal(ids, []string{rep1}) {
		t.Fatalf("groups.csv before resume: runs %v, want the completed run %s only", ids, rep1)
	}
	if runs := readRuns(t, env.Out); len(runs) != 2 || runs[0].Status != recorder.RunOK || runs[1].Status != recorder.RunAborted {
		t.Fatalf("longpoll-runs.csv before resume: %+v, want %s ok and %s aborted", runs, rep1, rep2)
	}

	measured := map[string]bool{}
	env.OnRequest = func(id string) { measured[id] = true }
	env.Resume = true
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(measured) != 1 || !measured[rep2] {
		t.Errorf("resume measured %v, want %s only", measured, rep2)
	}
	after := probesPerRun(t, env.Out)
	if len(after) != 2 || after[rep1] != before[rep1] {
		t.Errorf("probes per run after resume %v; want %s's %d kept", after, rep1, before[rep1])
	}
	groups, err := recorder.ReadFile[Group](filepath.Join(env.Out, groupFile))
	if err != nil || len(groups) != 2 || groups[0].RunID != rep1 || groups[1].RunID != rep2 {
		t.Fatalf("groups.csv after resume: %+v (%v), want %s and %s", groups, err, rep1, rep2)
	}
	runs := readRuns(t, env.Out)
	if len(runs) != 2 {
		t.Fatalf("longpoll-runs.csv after resume: %+v, want the two runs once (the aborted row dropped)", runs)
	}
	for i, g := range groups {
		if n := g.OK + g.Failed; after[g.RunID] != n || runs[i].RunID != g.RunID || runs[i].Status != recorder.RunOK || runs[i].Probes != n {
			t.Errorf("%s: %d rows in probes.csv, the group counts %d, its run %+v; want them equal, ok", g.RunID, after[g.RunID], n, runs[i])
		}
	}
	// The summary is over both runs, the resumed one as groups.csv has it.
	res := r.(*Result)
	if len(res.Groups) != 2 || res.Groups[0] != groups[0] || res.Groups[1].RunID != rep2 {
		t.Errorf("result groups %+v, want %s from groups.csv and %s", res.Groups, rep1, rep2)
	}
	if s := Summarize(res.Groups); len(s) != 1 || s[0].Runs != 2 {
		t.Errorf("summary over the repetitions %+v, want one condition of 2 runs", s)
	}
	sessions, err := recorder.ReadEnvironment(env.Out)
	if err != nil || len(sessions) != 2 {
		t.Errorf("environment.json: %d sessions (%v), want both", len(sessions), err)
	}

	other := tiny()
	other.Wait = lab.Duration(2 * time.Second)
	env.Scenario = nil
	_, err = other.Run(context.Background(), env)
	if want := "it was run with other settings: wait: 1s -> 2s"; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("resume with other settings: %v, want ... %q", err, want)
	}
	if again := probesPerRun(t, env.Out); len(again) != 2 || again[rep1] != after[rep1] || again[rep2] != after[rep2] {
		t.Errorf("probes per run after the refused resume %v, want %v unchanged", again, after)
	}
}

// A host busier than --max-host-cpu aborts the run with the reason and
// tries it again as .try2 and .try3; no aborted run has figures in
// groups.csv, and every probe row is of one of the tries. The test keeps
// a CPU busy itself, so the guard fires from what the test causes.
func TestHostCPUGuardAbortsAndRetries(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	// Far longer than the guard's two 1 s intervals: a run that ends ok
	// was not aborted.
	c.Reps, c.Seconds = 1, lab.Duration(30*time.Second)
	env := testEnv(t, stack.NameEmbedded, false)
	env.MaxHostCPU = 0.001
	labtest.BusyHost(t)
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if ids := runIDs(t, env.Out, groupID); len(ids) != 0 {
		t.Fatalf("groups.csv has runs %v: want none, every try aborted by the host guard", ids)
	}
	id := c.Conditions[0].RunID(1)
	tries := []string{id, id + ".try2", id + ".try3"}
	runs := readRuns(t, env.Out)
	var got []string
	for _, run := range runs {
		got = append(got, run.RunID)
		if run.Status != recorder.RunAborted || !strings.HasPrefix(run.Reason, "host CPU") {
			t.Errorf("run %s: %s %q, want aborted for host CPU", run.RunID, run.Status, run.Reason)
		}
	}
	if !slices.Equal(got, tries) {
		t.Errorf("runs %v, want %v", got, tries)
	}
	probes := probesPerRun(t, env.Out)
	for i, run := range runs {
		if probes[run.RunID] != run.Probes {
			t.Errorf("run %d %s: %d rows in probes.csv, the run counts %d", i, run.RunID, probes[run.RunID], run.Probes)
		}
	}
	for rid := range probes {
		if !slices.Contains(tries, rid) {
			t.Errorf("probes.csv has rows of run %s, not one of the tries %v", rid, tries)
		}
	}
	if res := r.(*Result); !res.AllFailed() || len(res.Groups) != 0 {
		t.Errorf("AllFailed %t, groups %+v; want true and none with every run aborted", res.AllFailed(), res.Groups)
	}
}
