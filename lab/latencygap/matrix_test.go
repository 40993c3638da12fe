package latencygap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem/netemtest"
	"github.com/slowlab/slowlab/recorder"
)

// tiny is two short runs on a path without delay: 1 KiB and 2 KiB
// responses, 2 requests per mode each.
func tiny() *Config {
	c := Published()
	c.Delays, c.Sizes, c.Runs = []lab.Duration{0}, []lab.Size{1024, 2048}, 2
	return c
}

// An interrupted session resumed with --resume keeps its completed run
// (not measured again, its rows as they were), drops the partial run's
// rows from every file and runs it again, so every run id ends with its
// rows exactly once; a resume with other settings is then refused, naming
// the field, and changes nothing.
func TestResumeAfterInterrupt(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := tiny()
	first, second := "latency-gap.1024B.0ms", "latency-gap.2048B.0ms"
	env := &lab.Env{Out: t.TempDir(), Progress: labtest.LogWriter{T: t}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.OnRequest = func(id string) { // interrupted at the second run's first request
		if id == second {
			cancel()
		}
	}
	if _, err := c.Run(ctx, env); err == nil {
		t.Fatal("interrupted session returned no error")
	}
	kept := labtest.ReadRows[Gap](t, env.Out)[0]

	var mu sync.Mutex
	measured := map[string]bool{}
	env.OnRequest = func(id string) {
		mu.Lock()
		defer mu.Unlock()
		measured[id] = true
	}
	env.Resume = true
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if measured[first] || !measured[second] {
		t.Errorf("the resumed session measured %v; want %s only", measured, second)
	}
	res := r.(*Result)
	if len(res.Rows) != 2 || res.Rows[0].Gap != kept || res.Rows[1].Gap.RunID != second {
		t.Errorf("result rows %+v; want %s as it was, then %s", res.Rows, first, second)
	}
	checkOnce(t, env.Out, c, []string{first, second})
	netemtest.CheckNothingLeft(t)

	other := tiny()
	other.Runs = 3
	env.Scenario = nil
	_, err = other.Run(context.Background(), env)
	if want := "it was run with other settings: runs: 2 -> 3"; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("resume with other settings: %v, want ... %q", err, want)
	}
	checkOnce(t, env.Out, c, []string{first, second})
}

// checkOnce asserts dir's gap-runs.csv holds ids, each ok once, gap.csv
// and gap-path.csv one row of each, and gap-requests.csv each run's every
// request once.
func checkOnce(t *testing.T, dir string, c *Config, ids []string) {
	t.Helper()
	var runs, gaps, paths []string
	for _, r := range labtest.ReadRows[RunRow](t, dir) {
		runs = append(runs, r.RunID+" "+r.Status)
	}
	for _, r := range labtest.ReadRows[Gap](t, dir) {
		gaps = append(gaps, r.RunID)
	}
	for _, r := range labtest.ReadRows[Path](t, dir) {
		paths = append(paths, r.RunID)
	}
	var want []string
	for _, id := range ids {
		want = append(want, id+" ok")
	}
	if !slices.Equal(runs, want) {
		t.Errorf("gap-runs.csv: %v, want each of %v ok once", runs, ids)
	}
	if !slices.Equal(gaps, ids) || !slices.Equal(paths, ids) {
		t.Errorf("gap.csv runs %v, gap-path.csv runs %v; want %v once each", gaps, paths, ids)
	}
	reqs := map[string]int{}
	for _, r := range labtest.ReadRows[Request](t, dir) {
		reqs[fmt.Sprintf("%s/%s/%d", r.RunID, r.Mode, r.Seq)]++
	}
	if len(reqs) != len(ids)*2*c.Runs {
		t.Errorf("gap-requests.csv: %d distinct requests %v, want %d", len(reqs), reqs, len(ids)*2*c.Runs)
	}
	for k, n := range reqs {
		if n != 1 || !slices.Contains(ids, strings.Split(k, "/")[0]) {
			t.Errorf("gap-requests.csv: request %s %d times", k, n)
		}
	}
}

// A host busier than --max-host-cpu (the test keeps a CPU busy itself)
// aborts the run with the guard's reason and tries it again as .try2 and
// .try3, each with its own rows; every run aborted, AllFailed holds.
func TestHostCPUGuardAbortsAndRetries(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := tiny()
	// 1000 requests of 10 ms each per mode: far longer than the guard's
	// two 1 s intervals, so a run ends by the guard.
	c.Sizes, c.Runs, c.Work = c.Sizes[:1], 1000, []Work{{D: 10 * time.Millisecond, Kind: WorkSleep}}
	env := &lab.Env{Out: t.TempDir(), Progress: labtest.LogWriter{T: t}, MaxHostCPU: 0.001}
	labtest.BusyHost(t)

	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	id := "latency-gap.1024B.0ms.work10ms"
	want := []string{id, id + ".try2", id + ".try3"}
	reqs := map[string]int{}
	for _, r := range labtest.ReadRows[Request](t, env.Out) {
		reqs[r.RunID]++
	}
	if len(reqs) != 3 || reqs[want[0]] == 0 || reqs[want[1]] == 0 || reqs[want[2]] == 0 {
		t.Errorf("requests by run %v, want requests of each of %v", reqs, want)
	}
	var ids []string
	for _, r := range labtest.ReadRows[RunRow](t, env.Out) {
		ids = append(ids, r.RunID)
		if r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU") {
			t.Errorf("run %s: %s %q, want aborted for host CPU", r.RunID, r.Status, r.Reason)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("gap-runs.csv: runs %v, want %v", ids, want)
	}
	if !res.AllFailed() || res.(*Result).ReasonsFile() != "gap-runs.csv" {
		t.Errorf("AllFailed %t, reasons in %s; want true, gap-runs.csv, with every run aborted", res.AllFailed(), res.(*Result).ReasonsFile())
	}
	netemtest.CheckNothingLeft(t)
}
