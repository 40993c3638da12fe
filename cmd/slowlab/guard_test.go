package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/longpoll"
	"github.com/slowlab/slowlab/recorder"
)

// TestDefaultGuardSparesOwnLoad runs long-poll's closed-loop probes, the
// lab's most CPU-hungry load, on the embedded stack as a user does:
// slowlab in a process of its own, the host-CPU guard at its default
// (no --max-host-cpu). On 2 cores the session keeps the host above 90%
// by itself; the guard judges only the CPU used outside the session, so
// every condition is measured on its first try and slowlab exits 0. (The
// guard that judged the whole host aborted 5 of the 6 published
// conditions three times each.) Work of others running beside it at
// normal priority still counts, as it should: on a machine others keep
// busy a run is aborted for it, and its reason says how busy (outside
// this session N%, host H%, this session S%).
//
// A run the guard aborts names this session's share: one it aborted while
// the session itself took 30% of the host or more is the bug this test
// is for (with the subtraction removed, every try was aborted at this
// session 65-77%). One aborted for others' work (this session a few %)
// proves nothing either way: the suite runs another package beside this
// one, so the command is run again, three times at the most, until every
// condition was measured.
func TestDefaultGuardSparesOwnLoad(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs an experiment on the embedded stack")
	want := []string{"sync-2.hold0.probes20.rep1", "gthread-2x16.hold0.probes20.rep1"}
	for attempt := 1; attempt <= 3; attempt++ {
		out := filepath.Join(t.TempDir(), "results")
		cmd := exec.Command(os.Args[0], "reproduce", "long-poll", "--stack", "embedded", "--reps", "1", "--seconds", "6", "--wait", "3s",
			"--condition", "sync-2:0:20", "--condition", "gthread-2x16:0:20", "--out", out)
		b, err := cmd.CombinedOutput()
		runs, rerr := recorder.ReadFile[longpoll.RunRow](filepath.Join(out, recorder.FileName[longpoll.RunRow]()))
		if rerr != nil {
			t.Fatalf("%v; output:\n%s", rerr, b)
		}
		var ok []string
		for _, r := range runs {
			if r.Status == recorder.RunOK {
				ok = append(ok, r.RunID)
				continue
			}
			share, found := sessionShare(r.Reason)
			if !found || share >= 30 {
				t.Errorf("run %s: %s %q: want ok, or aborted for work outside this session", r.RunID, r.Status, r.Reason)
				continue
			}
			t.Logf("attempt %d: run %s aborted for others' work: %s", attempt, r.RunID, r.Reason)
		}
		if t.Failed() {
			t.Fatalf("output:\n%s", b)
		}
		if strings.Join(ok, " ") == strings.Join(want, " ") {
			if err != nil {
				t.Errorf("slowlab: %v with every condition measured; output:\n%s", err, b)
			}
			return
		}
	}
	t.Errorf("on 3 attempts, work outside the session aborted some condition's every try: want each of %v measured once", want)
}

// sessionShare is the session's share of the host in a guard's abort
// reason ("... (host H%, this session S%)").
func sessionShare(reason string) (int, bool) {
	i := strings.LastIndex(reason, "(host ")
	if i < 0 {
		return 0, false
	}
	_, after, ok := strings.Cut(reason[i:], "this session ")
	if !ok {
		return 0, false
	}
	pct, _, ok := strings.Cut(after, "%")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(pct)
	return n, err == nil
}

// TestSessionShare reads the session's share, not the outside one that
// the reason names first.
func TestSessionShare(t *testing.T) {
	r := "host CPU used outside this session 95% above --max-host-cpu 90% for 2 s (host 98%, this session 3%)"
	if n, ok := sessionShare(r); !ok || n != 3 {
		t.Errorf("sessionShare = %d, %v; want 3", n, ok)
	}
	if _, ok := sessionShare("a run that failed"); ok {
		t.Error("a reason without the guard's figures gave a share")
	}
}
