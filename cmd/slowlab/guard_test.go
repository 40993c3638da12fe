package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
func TestDefaultGuardSparesOwnLoad(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(os.Args[0], "reproduce", "long-poll", "--stack", "embedded", "--reps", "1", "--seconds", "6", "--wait", "3s",
		"--condition", "sync-2:0:20", "--condition", "gthread-2x16:0:20", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("slowlab: %v; output:\n%s", err, b)
	}
	runs, rerr := recorder.ReadFile[recorder.LongPollRun](filepath.Join(out, recorder.FileName[recorder.LongPollRun]()))
	if rerr != nil {
		t.Fatal(rerr)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.RunID)
		if r.Status != recorder.RunOK {
			t.Errorf("run %s: %s %q, want ok", r.RunID, r.Status, r.Reason)
		}
	}
	if want := "sync-2.hold0.probes20.rep1 gthread-2x16.hold0.probes20.rep1"; strings.Join(ids, " ") != want {
		t.Errorf("runs %v, want %s: each condition once, none tried again", ids, want)
	}
}
