package lab_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// freshEnv is an env on the embedded stack whose work directories go to
// a directory of the test's own (TMPDIR), which it returns.
func freshEnv(t *testing.T) (*lab.Env, string) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	st, _, err := stack.Lookup("embedded")
	if err != nil {
		t.Fatal(err)
	}
	env := &lab.Env{Out: t.TempDir(), Stack: st}
	if err := os.MkdirAll(env.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	return env, tmp
}

func deployment(t *testing.T, id string) stack.Deployment {
	srv, err := stack.ParseServer("sync-2")
	if err != nil {
		t.Fatal(err)
	}
	return stack.Deployment{RunID: id, Route: stack.RouteBufferingOn, Server: srv}
}

// children are this process's live child processes (zombies not
// counted), as "pid command".
func children(t *testing.T) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid ...
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && f[0] != "Z" {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/stat")+" "+s[:i+1])
		}
	}
	return out
}

// checkNothingLeft: no work directory in tmp and no child process left.
func checkNothingLeft(t *testing.T, tmp string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(tmp, "slowlab-run-*"))
	if len(left) > 0 {
		t.Errorf("work directories left: %v", left)
	}
	slowlabtest.WaitFor(t, "no child process left", func() bool { return len(children(t)) == 0 },
		func() string { return strings.Join(children(t), "; ") })
}

// A run's own stack, once its load failed (here: the run measured
// nothing and its caller stops it), leaves no work directory, no stack
// process and no exporter; Stop again is harmless.
func TestFreshStackStopAfterLoadFailed(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts the embedded stack")
	env, tmp := freshEnv(t)
	checkNothingLeft(t, tmp)
	var pids map[string]int
	env.OnRunStart = func(_ string, p map[string]int) { pids = p }
	fr, err := lab.StartFresh(context.Background(), env, deployment(t, "fresh.load-failed"), false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recorder.CreateFile[recorder.ResourceSample](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	fr.Start(time.Now(), res)
	for _, role := range []string{"app", "proxy", "exporter"} {
		if pids[role] == 0 || syscall.Kill(pids[role], 0) != nil {
			t.Fatalf("%s not running after StartFresh: %v", role, pids)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "slowlab-run-*")); len(left) != 1 {
		t.Fatalf("work directories while the stack runs: %v, want one", left)
	}
	if err := fr.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	checkNothingLeft(t, tmp)
	if err := fr.Stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

// Instruments that cannot start (the targets file's directory is
// missing) fail StartFresh with their reason and leave nothing behind:
// the stack it started is stopped and its work directory removed.
func TestFreshStackInstrumentsFail(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts the embedded stack")
	env, tmp := freshEnv(t)
	env.TargetsFile = filepath.Join(t.TempDir(), "missing", "targets.json")
	fr, err := lab.StartFresh(context.Background(), env, deployment(t, "fresh.instruments-fail"), false)
	if err == nil {
		fr.Stop()
		t.Fatal("StartFresh with an unwritable targets file: no error")
	}
	if !strings.Contains(err.Error(), "targets.json") {
		t.Errorf("error %q does not name the targets file", err)
	}
	checkNothingLeft(t, tmp)
}

// A cancelled context: before the start, StartFresh fails with "start
// stack" and leaves nothing; cancelled while the run's load goes on, Stop
// leaves nothing either.
func TestFreshStackCancelled(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts the embedded stack")
	env, tmp := freshEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fr, err := lab.StartFresh(ctx, env, deployment(t, "fresh.cancelled-before"), true)
	if err == nil {
		fr.Stop()
		t.Fatal("StartFresh on a cancelled context: no error")
	}
	if !strings.HasPrefix(err.Error(), "start stack: ") {
		t.Errorf("error %q, want a start stack: reason", err)
	}
	checkNothingLeft(t, tmp)

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	fr, err = lab.StartFresh(ctx, env, deployment(t, "fresh.cancelled-during"), true)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	var v recorder.Run
	if werr := lab.Judge(ctx, lab.VerdictOf(&v), fr.Running, nil); werr != nil || v.Status != recorder.RunAborted ||
		!strings.HasPrefix(v.Reason, "interrupted: ") {
		t.Errorf("verdict of the cancelled run: %q %q (%v), want aborted, interrupted", v.Status, v.Reason, werr)
	}
	if err := fr.Stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("stop after cancel: %v", err)
	}
	checkNothingLeft(t, tmp)
}

// A run's work directory carries this process's PID, so the leak check
// every end-to-end test gets (slowlabtest.LeftBehind) finds one left
// behind, and no longer once it is removed.
func TestWorkDirIsFoundLeft(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := lab.NewWorkDir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(dir), lab.WorkDirPrefix+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("work dir %s: want %s%d-*", dir, lab.WorkDirPrefix, os.Getpid())
	}
	listed := func() bool {
		for _, s := range slowlabtest.LeftBehind() {
			if s == "work dir "+dir {
				return true
			}
		}
		return false
	}
	if !listed() {
		t.Errorf("LeftBehind %v does not list the work dir %s", slowlabtest.LeftBehind(), dir)
	}
	os.Remove(dir)
	if listed() {
		t.Errorf("LeftBehind lists the removed work dir %s", dir)
	}
}
