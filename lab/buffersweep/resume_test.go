package buffersweep

import (
	"context"
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// small is a sweep of one route and one rate whose cells are one short
// run each on the embedded stack.
func small(sizes ...lab.Size) *Config {
	c := Published()
	c.Stack().Stack = stack.NameEmbedded
	c.Routes, c.Sizes, c.Rates = []stack.Route{stack.RouteDirect}, sizes, []lab.Size{4 << 20}
	return c
}

// flagEnv is the session env for c from the shared flags args, parsed as
// `slowlab reproduce buffer-sweep` parses them (the flags buffer-sweep
// registered), on the embedded stack. The resume tests turn the host
// guard off (--max-host-cpu 0): a loaded machine would abort their runs.
func flagEnv(t *testing.T, c *Config, args ...string) *lab.Env {
	t.Helper()
	e, err := lab.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	var o lab.Options
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	o.AddFlags(fs, e.Shared)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	env, err := o.Env(c, labtest.LogWriter{T: t})
	if err != nil {
		t.Fatal(err)
	}
	env.Progress = labtest.LogWriter{T: t}
	return env
}

func readSweep(t *testing.T, dir string) []Cell {
	t.Helper()
	rows, err := recorder.ReadFile[Cell](filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// requestsPerRun counts each run's rows of a cell's requests.csv.
func requestsPerRun(t *testing.T, dir string) map[string]int {
	t.Helper()
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range rows {
		n[r.RunID]++
	}
	return n
}

// A sweep interrupted in its second cell, resumed with --resume, keeps the
// first cell as it was (its run not measured again), resumes the second
// and ends with each cell once in sweep.csv; other settings are refused
// naming the field.
func TestResumeSweepAfterInterrupt(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs a sweep on the embedded stack")
	c := small(1<<20, 2<<20)
	out := filepath.Join(t.TempDir(), "sweep")
	env := flagEnv(t, c, "--out", out, "--max-host-cpu", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted at the 3rd request measured once sweep.csv has the first
	// cell's row.
	seen := 0
	env.OnRequest = func(string) {
		if rows, _ := recorder.ReadFile[Cell](filepath.Join(out, "sweep.csv")); len(rows) > 0 {
			if seen++; seen == 3 {
				cancel()
			}
		}
	}
	if _, err := c.Run(ctx, env); err == nil {
		t.Fatal("interrupted sweep returned no error")
	}
	before := readSweep(t, out)
	if len(before) != 2 || before[0].RunsOK != 1 || before[1].RunsOK != 0 {
		t.Fatalf("before resume: %+v; want the first cell ok and the second interrupted", before)
	}
	first := filepath.Join(out, before[0].Dir)
	firstReqs := requestsPerRun(t, first)

	env = flagEnv(t, c, "--resume", out, "--max-host-cpu", "0")
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	after, returned := readSweep(t, out), r.(*Result).Cells
	if len(after) != 2 || len(returned) != 2 || rowKey(after[0]) == rowKey(after[1]) ||
		rowKey(returned[0]) != rowKey(after[0]) || rowKey(returned[1]) != rowKey(after[1]) {
		t.Fatalf("after resume: sweep.csv %+v, returned %+v; want the two cells once each", after, returned)
	}
	if !reflect.DeepEqual(after[0], before[0]) {
		t.Errorf("the completed cell's row changed: %+v -> %+v", before[0], after[0])
	}
	if got := requestsPerRun(t, first); !reflect.DeepEqual(got, firstReqs) {
		t.Errorf("the completed cell's requests.csv: %v runs' rows, was %v: want it not measured again", got, firstReqs)
	}
	if cell := after[1]; cell.SizeBytes != 2<<20 || cell.Runs != 1 || cell.RunsOK != 1 {
		t.Errorf("resumed cell %+v: want 2 MiB with its one run, ok", cell)
	}
	second, err := recorder.ReadFile[recorder.Run](filepath.Join(out, after[1].Dir, "runs.csv"))
	if err != nil || len(second) != 1 || second[0].Status != recorder.RunOK {
		t.Errorf("resumed cell's runs.csv: %+v (%v): want the interrupted run's row dropped, one ok run", second, err)
	}
	if sessions, err := recorder.ReadEnvironment(out); err != nil || len(sessions) != 2 {
		t.Errorf("environment.json: %d sessions (%v), want both", len(sessions), err)
	}

	other := small(1<<20, 2<<20)
	other.SlowClients = 1
	_, err = other.Run(context.Background(), flagEnv(t, other, "--resume", out, "--max-host-cpu", "0"))
	if want := "it was run with other settings: slow_clients: 2 -> 1"; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("resume with other settings: %v, want ... %q", err, want)
	}
	if got := readSweep(t, out); !reflect.DeepEqual(got, after) {
		t.Errorf("a refused resume changed sweep.csv: %+v", got)
	}
}

// --max-host-cpu reaches the cell's slow-client matrix: a host busier than
// it (the test keeps the CPUs busy) aborts the cell's run with the reason
// and tries it again as .try2 and .try3.
func TestSweepHostCPUGuardAbortsAndRetries(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs a sweep on the embedded stack")
	labtest.BusyHost(t)
	// 1 MiB read at 256 KiB/s: /fast runs for 4 s, past the guard's 2 s.
	c := small(1 << 20)
	c.Rates = []lab.Size{256 << 10}
	env := flagEnv(t, c, "--out", filepath.Join(t.TempDir(), "sweep"), "--max-host-cpu", "0.001")
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	res := r.(*Result)
	if len(res.Cells) != 1 || res.Cells[0].Runs != 3 || res.Cells[0].RunsOK != 0 || !res.AllFailed() {
		t.Fatalf("cells %+v: want one cell with 3 runs, none ok", res.Cells)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(env.Out, res.Cells[0].Dir, "runs.csv"))
	if err != nil || len(runs) != 3 {
		t.Fatalf("the cell's runs.csv: %+v (%v), want 3 runs", runs, err)
	}
	for i, r := range runs {
		want := "direct.sync-2.slow2.rep1"
		if i > 0 {
			want += ".try" + string(rune('1'+i))
		}
		if r.RunID != want || r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU") {
			t.Errorf("run %d: %s %s %q, want %s aborted for host CPU", i, r.RunID, r.Status, r.Reason, want)
		}
	}
}

// A sweep of two kernel settings interrupted in the second namespace's
// run (3 of its requests written), resumed: the first setting's child is
// not started again (its cell's requests.csv unchanged), the second's
// child resumes its own session (--resume: its interrupted run's rows
// dropped, the run again), and each setting's cell is in sweep.csv once.
func TestResumeSweepNamespaces(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "network namespaces for tcp_wmem")
	c := small(1 << 20)
	c.TCPWmemMax = []lab.Size{1 << 20, 2 << 20}
	out := filepath.Join(t.TempDir(), "sweep")
	second := filepath.Join(out, "kernel-wmem2m-rmemdefault", "size1m-rate4m")
	env := flagEnv(t, c, "--out", out, "--max-host-cpu", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if rows, _ := recorder.ReadFile[recorder.Request](filepath.Join(second, "requests.csv")); len(rows) >= 3 {
				cancel()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	if _, err := c.Run(ctx, env); err == nil {
		t.Fatal("interrupted sweep returned no error")
	}
	before := readSweep(t, out)
	if len(before) != 2 || before[0].RunsOK != 1 || !strings.HasPrefix(before[0].Kernel, "wmem=1m") || before[1].RunsOK != 0 {
		t.Fatalf("before resume: %+v; want the first setting's cell ok, the second's interrupted", before)
	}
	firstReqs := requestsPerRun(t, filepath.Join(out, before[0].Dir))
	env = flagEnv(t, c, "--resume", out, "--max-host-cpu", "0")
	if _, err := c.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	after := readSweep(t, out)
	if len(after) != 2 || after[0] != before[0] || !strings.HasPrefix(after[1].Kernel, "wmem=2m") || after[1].Runs != 1 || after[1].RunsOK != 1 {
		t.Fatalf("after resume: %+v; want the first setting's cell as it was, then the second's, its one run ok", after)
	}
	if got := requestsPerRun(t, filepath.Join(out, before[0].Dir)); !reflect.DeepEqual(got, firstReqs) {
		t.Errorf("the first setting's requests.csv: %v runs' rows, was %v: want it not measured again", got, firstReqs)
	}
	if child := readSweep(t, filepath.Dir(second)); len(child) != 1 || child[0].RunsOK != 1 {
		t.Errorf("the second namespace's own sweep.csv: %+v, want its cell once, ok", child)
	}
	if sessions, err := recorder.ReadEnvironment(filepath.Dir(second)); err != nil || len(sessions) != 2 {
		t.Errorf("the second namespace's environment.json: %d sessions (%v), want the child resumed", len(sessions), err)
	}
}

// --max-host-cpu reaches a namespace's child session too (as its own
// --max-host-cpu): the busy host aborts its cell's run and the child tries
// it again as .try2 and .try3. The child, every run failed, exits 1, which
// the sweep reports.
func TestSweepHostCPUGuardInNamespace(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "network namespaces for tcp_wmem")
	slowlabtest.BusyCPUs(t)
	c := small(1 << 20)
	c.Rates, c.TCPWmemMax = []lab.Size{256 << 10}, []lab.Size{1 << 20}
	out := filepath.Join(t.TempDir(), "sweep")
	// The child's cooldown is lab.HostBusyCooldown's default, 5 s.
	if _, err := c.Run(context.Background(), flagEnv(t, c, "--out", out, "--max-host-cpu", "0.001")); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("sweep: %v, want the child's exit status 1 (every run failed)", err)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(out, "kernel-wmem1m-rmemdefault", "size1m-rate256k", "runs.csv"))
	if err != nil || len(runs) != 3 {
		t.Fatalf("the cell's runs.csv: %+v (%v), want 3 runs", runs, err)
	}
	for i, r := range runs {
		if r.Status != recorder.RunAborted || !strings.HasPrefix(r.Reason, "host CPU") || i == 2 && !strings.HasSuffix(r.RunID, ".try3") {
			t.Errorf("run %d: %s %s %q, want aborted for host CPU, the last .try3", i, r.RunID, r.Status, r.Reason)
		}
	}
}

// A cell is complete only with a row for each route, each with every
// repetition ok: a missing route, a route twice or a run not ok leaves it
// to run again.
func TestCompleteCells(t *testing.T) {
	c := Published()
	c.Reps = 2
	row := func(size int64, route stack.Route, ok int) Cell {
		return Cell{Kernel: "host", SizeBytes: size, RateBps: 1 << 20, Route: string(route), Runs: 2, RunsOK: ok}
	}
	var rows []Cell
	for _, r := range c.Routes {
		rows = append(rows, row(1, r, 2), row(2, r, 2), row(3, r, 2))
	}
	rows[4].RunsOK = 1                                        // size 2: buffering off, one run not ok
	rows = append(rows[:len(rows)-1], row(3, c.Routes[0], 2)) // size 3: buffering on missing, direct twice
	got := c.complete(rows)
	if want := map[string]bool{cellKey("host", 1, 1<<20): true}; !reflect.DeepEqual(got, want) {
		t.Errorf("complete: %v, want only the 1-byte cell", got)
	}
}
