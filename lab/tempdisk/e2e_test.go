package tempdisk

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/lab/tempcliff"
	"github.com/slowlab/slowlab/recorder"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// shapeConfig is --quick's matrix with /fast for 1.5 s: 2 slow readers of
// 16 MiB at 8 MiB/s, the temp dir on an 8 MiB tmpfs, then on disk.
func shapeConfig() *tempcliff.Config {
	c := Published()
	c.Reduce()
	c.Reps = 1
	c.Fast.Rate, c.Fast.Duration = 10, lab.Duration(1500*time.Millisecond)
	return c
}

// checkShape: a full temp disk is reported, not silent: the proxy logs
// errors, at least one download is cut short of its 16 MiB, and the
// exporter saw the temp filesystem (almost) full; /fast is answered; on
// disk every download completes with no error.
func checkShape(t *testing.T, res *tempcliff.Result) {
	t.Helper()
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	full, onDisk := res.Runs[0], res.Runs[1]
	for _, r := range res.Runs {
		if r.Status != recorder.RunOK || r.FastOK != r.FastPlanned {
			t.Errorf("%s: %s %s, /fast %d ok of %d", r.RunID, r.Status, r.Reason, r.FastOK, r.FastPlanned)
		}
		t.Logf("%s: complete %d, cut %d, fewest bytes %d, proxy errors %d, temp fs avail min %v MiB, temp peak %v MiB, /fast p95 %v ms",
			r.RunID, r.DownloadsComplete, r.DownloadsCut, r.BytesMin, r.ProxyErrors, r.TempFSAvailMinMiB, r.TempPeakMiB, r.P95MS)
	}
	if full.ProxyErrors < 1 || full.DownloadsCut < 1 || full.BytesMin >= full.SizeBytes {
		t.Errorf("full temp disk: %d proxy errors, %d downloads cut, fewest bytes %d; want errors logged and a download cut", full.ProxyErrors, full.DownloadsCut, full.BytesMin)
	}
	// The proxy frees its temp files as soon as it cuts the responses: a
	// 50 ms scrape sees the filesystem filling, not always quite full.
	if tmpfs := float64(full.TempTmpfsBytes) / (1 << 20); !full.TempFSAvailMinMiB.Valid || full.TempFSAvailMinMiB.Value > tmpfs/2 {
		t.Errorf("full temp disk: the exporter's least temp fs space %v MiB of %.0f; want it seen below half", full.TempFSAvailMinMiB, tmpfs)
	}
	if onDisk.ProxyErrors != 0 || onDisk.DownloadsComplete != 2 {
		t.Errorf("on disk: %d proxy errors, %d downloads complete; want 0 and 2", onDisk.ProxyErrors, onDisk.DownloadsComplete)
	}
}

func runShape(t *testing.T, stackName string) {
	slowlabtest.RequireRoot(t, "a mount namespace for the proxy's temp dir")
	env := labtest.Env(t, stackName)
	res, err := shapeConfig().Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, res.(*tempcliff.Result))
	checkNothingLeft(t)
}

// checkNothingLeft: no process has a tmpfs of the proxy's mounted, and no
// run work directory is left.
func checkNothingLeft(t *testing.T) {
	t.Helper()
	slowlabtest.WaitFor(t, "no proxy tmpfs mounted anywhere", func() bool { return mountedAnywhere() == "" }, mountedAnywhere)
}

func mountedAnywhere() string {
	procs, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), " slowlab-proxy-temp ") {
			return p
		}
	}
	return ""
}

// TestTempDiskFullShapeEmbedded runs the reduced matrix on the embedded
// stack.
func TestTempDiskFullShapeEmbedded(t *testing.T) { runShape(t, stack.NameEmbedded) }

// TestTempDiskFullShapeReal runs it on real Gunicorn + NGINX, whose log
// has NGINX's own ENOSPC line.
func TestTempDiskFullShapeReal(t *testing.T) { runShape(t, stack.NameReal) }

// TestTempDiskFullInterrupted: slowlab reproduce temp-disk-full, sent
// SIGINT while the proxy's tmpfs is mounted, exits leaving no mount, no
// process of the run and no run work directory.
func TestTempDiskFullInterrupted(t *testing.T) {
	slowlabtest.RequireRoot(t, "a mount namespace for the proxy's temp dir")
	bin := os.Getenv(child.ExecutableEnv)
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowlab-run-*"))
	cmd := exec.Command(bin, "reproduce", Name, "--quick", "--stack", "embedded", "--out", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slowlabtest.WaitFor(t, "the proxy's tmpfs to be mounted", func() bool { return mountedAnywhere() != "" }, func() string { return "" })
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	checkNothingLeft(t)
	slowlabtest.WaitFor(t, "the run's work directories to be gone", func() bool {
		after, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowlab-run-*"))
		return len(after) <= len(before)
	}, func() string {
		after, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowlab-run-*"))
		return strings.Join(after, " ")
	})
}
