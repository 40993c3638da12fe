package lab_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// TestJudgeDeadComponent: a component of a run's stack that died during
// the run (killed by its PID here, the app and then the proxy of the
// embedded stack) fails the run, Judge's reason naming it, ahead of the
// experiment's own reasons; while every component is up, the same
// reasons decide. An experiment that relies on Judge alone must not
// record a dead stack as ok.
func TestJudgeDeadComponent(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts the embedded stack and kills its components")
	env, tmp := freshEnv(t)
	for _, role := range []string{"app", "proxy"} {
		fr, err := lab.StartFresh(context.Background(), env, deployment(t, "judge.dead-"+role), false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fr.Stop() })
		judge := func(reasons ...string) recorder.Run {
			v := recorder.Run{Status: recorder.RunOK}
			if err := lab.Judge(context.Background(), lab.VerdictOf(&v), fr.Running, nil, reasons...); err != nil {
				t.Errorf("Judge: %v", err)
			}
			return v
		}
		if v := judge(); v.Status != recorder.RunOK || v.Reason != "" {
			t.Errorf("%s up: %s %q, want ok", role, v.Status, v.Reason)
		}
		if v := judge("", "its own"); v.Status != recorder.RunFailed || v.Reason != "its own" {
			t.Errorf("%s up, a reason of its own: %s %q, want failed, its own", role, v.Status, v.Reason)
		}
		pid := fr.Running.PIDs()[role]
		if pid == 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
			t.Fatalf("no %s to kill: %v", role, fr.Running.PIDs())
		}
		// Gone once reaped (the stack reaps its children), and seen so.
		slowlabtest.WaitFor(t, role+" gone", func() bool {
			return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) && fr.Running.Failed() != nil
		})
		for _, reasons := range [][]string{nil, {"its own"}} {
			v := judge(reasons...)
			if v.Status != recorder.RunFailed || !strings.HasPrefix(v.Reason, role+": ") || !strings.Contains(v.Reason, "(pid "+strconv.Itoa(pid)+") exited during the run") {
				t.Errorf("%s killed, reasons %q: %s %q, want failed naming the %s (pid %d)", role, reasons, v.Status, v.Reason, role, pid)
			}
		}
		if err := fr.Stop(); err != nil {
			t.Logf("stop after the %s was killed: %v", role, err)
		}
	}
	checkNothingLeft(t, tmp)
}
