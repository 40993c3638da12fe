package stalledreader

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// tiny is a matrix of two short runs on sync-2, direct and behind the
// buffering proxy: one reader of a 256 KiB /large at 1 MiB/s, /fast at
// 10 req/s for 1 s (10 requests).
func tiny() *Config {
	c := Published()
	c.Reps, c.Size = 1, 256<<10
	c.Client.Rate, c.Client.Stall, c.Client.GiveUp = 1<<20, lab.Duration(time.Second), lab.Duration(5*time.Second)
	c.Fast.Rate, c.Fast.Offset, c.Fast.Duration = 10, 0, lab.Duration(time.Second)
	c.Conditions = []Condition{
		{Route: stack.RouteDirect, Server: "sync-2", Mode: ModeSlow, Clients: 1},
		{Route: stack.RouteBufferingOn, Server: "sync-2", Mode: ModeSlow, Clients: 1},
	}
	return c
}

// An interrupted session resumed with --resume keeps its completed run
// (not measured again, its row as it was), drops the partial run's rows
// from every file and runs it again, so every run id ends with its rows
// exactly once; a resume with other settings is then refused, naming the
// fields, and changes nothing.
func TestResumeAfterInterrupt(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	env := labtest.Env(t, stack.NameEmbedded)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted after 3 requests of the second run were measured.
	second := 0
	env.OnRequest = func(id string) {
		if strings.HasPrefix(id, string(stack.RouteBufferingOn)) {
			if second++; second == 3 {
				cancel()
			}
		}
	}
	if _, err := c.Run(ctx, env); err == nil {
		t.Fatal("interrupted session returned no error")
	}
	before := labtest.ReadRows[RunRow](t, env.Out)
	if len(before) != 2 || before[0].Status != recorder.RunOK || before[1].Status != recorder.RunAborted {
		t.Fatalf("before resume: %+v; want the first run ok, the second aborted", before)
	}
	first, partial := before[0], before[1].RunID

	var mu sync.Mutex
	measured := map[string]bool{}
	env.OnRequest = func(id string) {
		mu.Lock()
		defer mu.Unlock()
		measured[id] = true
	}
	env.Resume = true
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if measured[first.RunID] || !measured[partial] {
		t.Errorf("the resumed session measured %v; want %s only", measured, partial)
	}
	runs := res.(*Result).Runs
	if len(runs) != 2 || runs[0] != first || runs[1].RunID != partial || runs[1].Status != recorder.RunOK {
		t.Fatalf("after resume: %+v; want %s as it was, then %s ok", runs, first.RunID, partial)
	}
	checkOnce(t, env.Out, runs)
	if sessions, err := recorder.ReadEnvironment(env.Out); err != nil || len(sessions) != 2 {
		t.Errorf("environment.json: %d sessions (%v), want both", len(sessions), err)
	}

	other := tiny()
	other.Fast.Rate, other.Size = 20, 512<<10
	env.Scenario = nil
	_, err = other.Run(context.Background(), env)
	want := "it was run with other settings: fast.rate: 10 -> 20; size: 256k -> 512k"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("resume with other settings: %v, want ... %q", err, want)
	}
	checkOnce(t, env.Out, runs)
}

// checkOnce asserts dir's results files hold runs, each once, with every
// one of its scheduled requests and its download once, and resource
// samples of those runs only, each run's in one session's order.
func checkOnce(t *testing.T, dir string, runs []RunRow) {
	t.Helper()
	verdicts := func(rs []RunRow) (out []string) {
		for _, r := range rs {
			out = append(out, r.RunID+" "+r.Status)
		}
		return out
	}
	if got, want := verdicts(labtest.ReadRows[RunRow](t, dir)), verdicts(runs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: %v, want %v", runFile, got, want)
	}
	planned := map[string]int{}
	for _, r := range runs {
		planned[r.RunID] = r.FastPlanned
	}
	seqs := map[string]map[int]int{}
	for _, r := range labtest.ReadRows[recorder.Request](t, dir) {
		if seqs[r.RunID] == nil {
			seqs[r.RunID] = map[int]int{}
		}
		seqs[r.RunID][r.Seq]++
	}
	for id, n := range planned {
		if len(seqs[id]) != n || n == 0 {
			t.Errorf("requests of %s: %d sequence numbers, want %d", id, len(seqs[id]), n)
		}
		for seq, k := range seqs[id] {
			if k != 1 {
				t.Errorf("requests of %s: seq %d %d times", id, seq, k)
			}
		}
	}
	if len(seqs) != len(planned) {
		t.Errorf("requests of runs %v, want %v", keys(seqs), keys(planned))
	}
	clients := map[string]int{}
	for _, d := range labtest.ReadRows[Download](t, dir) {
		clients[fmt.Sprintf("%s/%d", d.RunID, d.Client)]++
	}
	if len(clients) != len(runs) {
		t.Errorf("downloads %v, want one per run", clients)
	}
	for k, n := range clients {
		if n != 1 {
			t.Errorf("download %s: %d rows", k, n)
		}
	}
	// A second session's samples of a run would start again from 0.
	last := map[string]float64{}
	for _, s := range labtest.ReadRows[recorder.ResourceSample](t, dir) {
		k := s.RunID + "/" + s.Component
		if _, ok := planned[s.RunID]; !ok {
			t.Errorf("resource sample of run %s", s.RunID)
		}
		if prev, ok := last[k]; ok && s.TS < prev {
			t.Errorf("resource samples of %s: %.3f s after %.3f s, from two sessions", k, s.TS, prev)
		}
		last[k] = s.TS
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A host busier than --max-host-cpu (the test keeps a CPU busy itself)
// aborts the run with the guard's reason and tries it again as .try2 and
// .try3, each with its own rows; every run aborted, AllFailed holds.
func TestHostCPUGuardAbortsAndRetries(t *testing.T) {
	slowlabtest.Timing(t)
	c := tiny()
	c.Conditions = c.Conditions[:1]
	// Longer than the guard's two 1 s intervals, so a run ends by the
	// guard, not by its schedule.
	c.Fast.Duration = lab.Duration(6 * time.Second)
	env := labtest.Env(t, stack.NameEmbedded)
	env.MaxHostCPU = 0.001
	labtest.BusyHost(t)

	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	runs := res.(*Result).Runs
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.RunID)
		if r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU") {
			t.Errorf("run %s: %s %q, want aborted for host CPU", r.RunID, r.Status, r.Reason)
		}
	}
	if want := "direct.sync-2.slow1.rep1 direct.sync-2.slow1.rep1.try2 direct.sync-2.slow1.rep1.try3"; strings.Join(ids, " ") != want {
		t.Errorf("runs %v, want %s", ids, want)
	}
	if !res.AllFailed() {
		t.Error("AllFailed is false with every run aborted")
	}
	rows := labtest.ReadRows[RunRow](t, env.Out)
	reqs := map[string]int{}
	for _, r := range labtest.ReadRows[recorder.Request](t, env.Out) {
		reqs[r.RunID]++
	}
	if len(rows) != 3 || len(reqs) != 3 {
		t.Errorf("%d run rows, requests of %v; want 3 runs, each with its own requests", len(rows), reqs)
	}
}
