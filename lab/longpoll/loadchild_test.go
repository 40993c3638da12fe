package longpoll

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/loadchild"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// The probes run in a load generator of their own, in the load
// generator's cgroup with its limit; the session, which samples and
// writes the rows, is not in that cgroup (it was, and the published
// 128 MiB limit SIGKILLed it with every row it had not written).
func TestProbesRunOutsideTheSession(t *testing.T) {
	env := testEnv(t, "embedded", false)
	slowlabtest.Require(t, env.Stack.Cgroups, "cgroups are not usable (root with a cgroup hierarchy)")
	env.Stack.Limits = map[string]cgroup.Limits{"loadgen": {MemoryBytes: 128 << 20}}
	c := short(Condition{Server: "sync-2", Hold: 1, Probes: 4})
	c.Seconds, c.Lead = c.Seconds/2, c.Lead/2
	checked := labtest.LoadgenAlone(t, env)
	start := time.Now()
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if *checked == 0 {
		t.Fatal("no probe was measured")
	}
	g := r.(*Result).Groups[0]
	if g.OK == 0 || g.Failed != 0 || g.ElapsedS < g.Seconds || g.ElapsedS > time.Since(start).Seconds() {
		t.Errorf("group %+v: want ok probes, none failed, elapsed from the window's start to the last probe's end", g)
	}
}

// A load generator over its memory limit fails the run with that reason:
// the session, outside the limit, survives to say so and goes on, and
// every probe reported before the kill is a row of probes.csv. (The
// session used to be in the cgroup: the kernel killed it, exit 137 and no
// message.)
func TestLongPollLoadgenKilledForMemory(t *testing.T) {
	env := testEnv(t, "embedded", false)
	slowlabtest.Require(t, env.Stack.Cgroups, "cgroups are not usable (root with a cgroup hierarchy)")
	swap := cgroup.SwapEnforcement(cgroup.DefaultRoot, "/proc")
	slowlabtest.Require(t, strings.HasPrefix(swap, "none allowed") || strings.HasSuffix(swap, "the host has no swap"),
		"swap: "+swap+": a process over its memory limit would swap instead of being killed")
	env.Stack.Limits = map[string]cgroup.Limits{"loadgen": {MemoryBytes: 6 << 20}}
	reported := 0
	env.OnRequest = func(string) { reported++ }
	c := short(Condition{Server: "sync-2", Hold: 1, Probes: 4})
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result).Runs[0]
	if r.Status != recorder.RunFailed || !strings.Contains(r.Reason, loadchild.ErrKilledForMemory.Error()) || !strings.Contains(r.Reason, "6 MiB") {
		t.Fatalf("run %s: %s %q, want failed with the load generator killed for memory at its 6 MiB limit", r.RunID, r.Status, r.Reason)
	}
	if !res.AllFailed() {
		t.Error("AllFailed is false with the only run failed")
	}
	t.Logf("%s (%d probes reported before)", r.Reason, reported)
	probes, rerr := recorder.ReadFile[Probe](filepath.Join(env.Out, "probes.csv"))
	if rerr != nil || len(probes) != reported || r.Probes != reported {
		t.Errorf("probes.csv: %d rows (%v), the run counts %d; want the %d reported before the kill", len(probes), rerr, r.Probes, reported)
	}
}

// Interrupting a run stops its load generator child (SIGTERM: it ends its
// requests and reports them), keeps every probe reported as a row, and
// leaves neither the child nor its cgroup behind.
func TestLongPollInterruptStopsTheLoadGenerator(t *testing.T) {
	slowlabtest.Timing(t)
	env := testEnv(t, "embedded", false)
	slowlabtest.Require(t, env.Stack.Cgroups, "cgroups are not usable (root with a cgroup hierarchy)")
	env.Stack.Limits = map[string]cgroup.Limits{"loadgen": {MemoryBytes: 128 << 20}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reported, runID := 0, ""
	env.OnRequest = func(id string) {
		if reported++; reported == 200 {
			runID = id
			cancel()
		}
	}
	c := short(Condition{Server: "sync-2", Hold: 1, Probes: 4})
	c.Seconds = lab.Duration(time.Hour)
	_, err := c.Run(ctx, env)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	probes, rerr := recorder.ReadFile[Probe](filepath.Join(env.Out, "probes.csv"))
	if rerr != nil || len(probes) != reported || reported < 200 {
		t.Errorf("probes.csv: %d rows (%v), want the %d reported (at least 200)", len(probes), rerr, reported)
	}
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	if pids, err := layout.Pids(stack.CgroupName(runID, "loadgen")); err == nil {
		t.Errorf("the load generator's cgroup is still there, pids %v", pids)
	}
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-f", CmdProbeLoop).Output()
	if len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("probe-loop children still running: %s", out)
	}
}
