package lab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

func TestParseServer(t *testing.T) {
	for _, s := range []string{"sync-2", "sync-1", "gthread-1x4", "gthread-2x16", "async"} {
		spec, err := ParseServer(s)
		if err != nil || spec.Name() != s {
			t.Errorf("ParseServer(%q) = %+v, %v", s, spec, err)
		}
	}
	for _, s := range []string{"", "sync", "sync-0", "sync-x", "gthread-2", "gthread-0x4", "gthread-2x", "prefork-2"} {
		if _, err := ParseServer(s); err == nil {
			t.Errorf("ParseServer(%q) accepted", s)
		}
	}
}

func TestDefaultSlowClientIsThePublishedMatrix(t *testing.T) {
	e := DefaultSlowClient()
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	runs := e.Runs()
	if len(runs) != 30 {
		t.Fatalf("%d runs, want 27 + 3 gthread", len(runs))
	}
	ids := map[string]bool{}
	for _, r := range runs {
		if ids[r.ID()] {
			t.Errorf("duplicate run id %s", r.ID())
		}
		ids[r.ID()] = true
	}
	last := e.Conditions[len(e.Conditions)-1]
	if last.Server.Name() != "gthread-1x4" || last.Route != RouteDirect || last.SlowClients != 2 {
		t.Errorf("auxiliary condition %+v", last)
	}
	if d := e.Duration(2); d != 9250*time.Millisecond {
		t.Errorf("intrinsic duration %s, want 9.25s (fast schedule outlasts 8 s downloads)", d)
	}
}

func TestSlowClientValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*SlowClient)
		want string
	}{
		{func(e *SlowClient) { e.Conditions = nil }, "conditions: none given"},
		{func(e *SlowClient) { e.Conditions[0].Route = "sideways" }, `conditions[0].route "sideways": allowed direct, proxy-buffering-off, proxy-buffering-on`},
		{func(e *SlowClient) { e.Conditions[1].Server.Workers = 0 }, "conditions[1].server: workers 0: must be at least 1"},
		{func(e *SlowClient) { e.Conditions[2].SlowClients = -1 }, "conditions[2].slow_clients -1: allowed 0 to 1000"},
		{func(e *SlowClient) { e.Reps = 0 }, "reps 0: allowed 1 to 1000"},
		{func(e *SlowClient) { e.FastRate = 0 }, "fast rate 0: allowed more than 0 up to 10000 requests/s"},
		{func(e *SlowClient) { e.FastDuration = 0 }, "fast duration 0s: must be more than 0"},
		{func(e *SlowClient) { e.ReadRate = 0 }, "read rate 0: must be more than 0 bytes/s"},
	} {
		e := DefaultSlowClient()
		tc.mod(&e)
		if err := e.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestCgroupVersion(t *testing.T) {
	mk := func(paths ...string) string {
		root := t.TempDir()
		for _, p := range paths {
			os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
			os.WriteFile(filepath.Join(root, p), nil, 0o644)
		}
		return root
	}
	for want, root := range map[string]string{
		"v2":     mk("cgroup.controllers"),
		"v1":     mk("cpu/tasks", "memory/tasks"),
		"hybrid": mk("cpu/tasks", "unified/cgroup.controllers"),
		"none":   mk(),
	} {
		if got := CgroupVersion(root); got != want {
			t.Errorf("CgroupVersion = %q, want %q", got, want)
		}
	}
}

func TestChildExitsBeforeReady(t *testing.T) {
	_, err := startChild(context.Background(), "broken", filepath.Join(t.TempDir(), "log"), []string{"/bin/sh", "-c", "echo no config here >&2; exit 3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "broken exited before it was ready") || !strings.Contains(err.Error(), "no config here") {
		t.Fatalf("err = %v; want the exit and the log tail", err)
	}
}

// stop must end the child's whole process group, grandchildren included.
func TestChildStopEndsProcessGroup(t *testing.T) {
	c, err := startChild(context.Background(), "parent", filepath.Join(t.TempDir(), "log"),
		[]string{"/bin/sh", "-c", "trap '' TERM; sleep 60 & echo ready grandchild=$!; wait"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := strconv.Atoi(c.ready["grandchild"])
	if err != nil {
		t.Fatalf("ready line %v", c.ready)
	}
	if syscall.Kill(gc, 0) != nil {
		t.Fatal("grandchild not running")
	}
	if err := c.stop(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(gc, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after stop", gc)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if done, _ := c.exited(); !done {
		t.Error("child not reaped")
	}
}

func TestPrintConditions(t *testing.T) {
	var b bytes.Buffer
	PrintConditions(&b, []recorder.Condition{
		{Route: "direct", Server: "sync-2", SlowClients: 2, Runs: 3, P50MS: recorder.Some(2500), P95MS: recorder.Some(5932.86), P95MinMS: recorder.Some(5800), P95MaxMS: recorder.Some(6000), AppSendS: recorder.Some(6.5), ClientReceiveS: recorder.Some(8.01)},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "route") || !strings.Contains(lines[1], "5932.9") || !strings.Contains(lines[1], "5800.0-6000.0") || !strings.HasSuffix(lines[1], "-") {
		t.Errorf("table:\n%s", b.String())
	}
}
