package loadchild

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// loadCgroup is a fresh cgroup with a 32 MiB memory limit (no swap where
// the kernel accounts it), removed at the end of the test.
func loadCgroup(t *testing.T) *cgroup.Cgroup {
	slowlabtest.RequireRoot(t, "a real cgroup memory limit")
	swap := cgroup.SwapEnforcement(cgroup.DefaultRoot, "/proc")
	slowlabtest.Require(t, strings.HasPrefix(swap, "none allowed") || strings.HasSuffix(swap, "the host has no swap"),
		"swap: "+swap+": a process over its memory limit would swap instead of being killed")
	b := make([]byte, 4)
	rand.Read(b)
	cg, err := cgroup.New(cgroup.DefaultRoot, "slowlab/test-"+hex.EncodeToString(b)+"/loadgen", cgroup.Limits{MemoryBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("remove %s: %v", cg.Path(), err)
		}
	})
	_, err = cg.OOMKills()
	slowlabtest.Require(t, !errors.Is(err, cgroup.ErrNoOOMCount), "the kernel does not count OOM kills per cgroup (Linux 4.13+)")
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

// runProbeChild runs a shell child in cg that prints 200 probe result
// lines and then runs then; the session side parses each line and writes
// a requests.csv row for it as it arrives. It returns Run's error
// and the path of requests.csv, not closed: what is in it was on disk
// before the child ended.
func runProbeChild(t *testing.T, cg *cgroup.Cgroup, then string) (string, error) {
	dir := t.TempDir()
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	script := `i=0; while [ $i -lt 200 ]; do echo "probe 1 $i 1764770000000000000 0 100000 200000 200 3 1 - \"\""; i=$((i+1)); done; ` + then
	argv := []string{"/bin/sh", "-c", script}
	err = Run(context.Background(), cg, 32<<20, argv, filepath.Join(dir, "loadgen.log"), func(line string) error {
		_, r, err := loadgen.ParseResultLine(line)
		if err != nil {
			return err
		}
		return w.Write(recorder.Request{RunID: "oom", Seq: r.Seq, LatencyMS: float64(r.Latency) / 1e6, Status: r.Status, Bytes: r.Bytes})
	})
	return w.Name(), err
}

// rowsOnDisk counts the data rows of a CSV file.
func rowsOnDisk(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n") - 1
}

// A load generator that outgrows its cgroup's memory limit is killed by
// the kernel; the run fails saying so (the cgroup, its limit), and every
// row the load generator reported before is on disk. A child killed for
// another reason, or one that exits cleanly, is not reported as killed
// for memory.
func TestLoadGeneratorKilledForMemory(t *testing.T) {
	cg := loadCgroup(t)
	// The hog doubles a string up to 256 MiB in a limit of 32 MiB.
	csv, err := runProbeChild(t, cg, `exec awk 'BEGIN { s = "x"; while (length(s) < 268435456) s = s s; print length(s) }'`)
	if !errors.Is(err, ErrKilledForMemory) || !strings.Contains(err.Error(), cg.Path()) || !strings.Contains(err.Error(), "32 MiB") {
		t.Errorf("error %v, want ErrKilledForMemory naming cgroup %s and its 32 MiB limit", err, cg.Path())
	}
	if n := rowsOnDisk(t, csv); n != 200 {
		t.Errorf("%d rows on disk, want the 200 reported before the kill", n)
	}
	t.Logf("killed for memory: %v", err)

	csv, err = runProbeChild(t, cg, `kill -9 $$`)
	if err == nil || errors.Is(err, ErrKilledForMemory) || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("SIGKILL, not for memory: error %v, want the signal and not ErrKilledForMemory", err)
	}
	if n := rowsOnDisk(t, csv); n != 200 {
		t.Errorf("%d rows on disk after a SIGKILL, want 200", n)
	}
	if csv, err = runProbeChild(t, cg, `exit 0`); err != nil || rowsOnDisk(t, csv) != 200 {
		t.Errorf("clean exit: error %v, %d rows; want none and 200", err, rowsOnDisk(t, csv))
	}
	if _, err = runProbeChild(t, cg, `echo "probe 1 2 x"`); err == nil || !strings.Contains(err.Error(), "result line") {
		t.Errorf("a corrupt line: error %v, want the parse error", err)
	}
}
