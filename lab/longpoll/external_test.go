package longpoll

import (
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestExternalLongPollNode runs long-poll on the external stack against a
// Node.js app the test starts itself: the holders' requests reach the
// user's long-poll URL (the app, read by the test, holds every one of
// them while the probes run) and the probes its fast URL, all answered.
func TestExternalLongPollNode(t *testing.T) {
	slowlabtest.Timing(t)
	own := labtest.StartOwn(t, stack.NameReal, stack.RouteDirect, "node-1", 0)
	hc, ok := own.HeldCounter()
	if !ok {
		t.Fatal("the Node app counts no held long-polls")
	}
	cond := Condition{Server: "node-1", Hold: 4, Probes: 2}
	c := short(cond)
	// A 1 s window, not 4: the check is the most long-polls the app held
	// at a sample, every tenth probe's; the 4 are held from the lead's
	// start to past the window's end (the 3 s wait), so the first sample
	// finds them all (740 probes in 4 s were seen, 74 samples; in 1 s 260
	// probes, 26 samples).
	c.Seconds = lab.Duration(time.Second)
	c.Reps = 1
	c.StackSpec.Stack = stack.NameExternal
	c.StackSpec.External = &lab.ExternalSpec{FastURL: own.URL() + "/fast", LongPollURL: own.URL() + "/longpoll", Server: "node-1",
		Groups: map[string][]string{"app": {"tree:" + strconv.Itoa(own.PIDs()["app"])}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	env, err := (lab.Options{Out: t.TempDir()}).Env(c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	env.Progress = labtest.LogWriter{T: t}
	var mu sync.Mutex
	maxHeld, probes := 0, 0
	env.OnRequest = func(string) {
		mu.Lock()
		defer mu.Unlock()
		if probes++; probes%10 != 1 {
			return
		}
		byWorker, err := hc.LongPollsHeld(context.Background())
		if err != nil {
			t.Errorf("read held long-polls: %v", err)
			return
		}
		n := 0
		for _, v := range byWorker {
			n += v
		}
		maxHeld = max(maxHeld, n)
	}
	got := runLongPoll(t, c, env)
	g := got["node-1/4/2"]
	t.Logf("node-1 holding 4 with 2 probes: %d ok, p95 %.1f ms; the app held up to %d", g.OK, g.P95MS.Value, maxHeld)
	if g.OK == 0 {
		t.Errorf("no probe answered: %+v", g)
	}
	if maxHeld != cond.Hold {
		t.Errorf("the app held at most %d long-polls while the probes ran, want the %d held through the external URL", maxHeld, cond.Hold)
	}
}
