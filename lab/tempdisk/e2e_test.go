package tempdisk

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
// exporter reports the proxy's tmpfs and counts at least one failed temp
// write in its error log; /fast is answered; on disk every download
// completes with no error, none counted.
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
		t.Logf("%s: complete %d, cut %d, fewest bytes %d, proxy errors %d, exporter temp write errors %v, temp fs avail min %v MiB, temp peak %v MiB, /fast p95 %v ms",
			r.RunID, r.DownloadsComplete, r.DownloadsCut, r.BytesMin, r.ProxyErrors, r.ExporterTempWriteErrors, r.TempFSAvailMinMiB, r.TempPeakMiB, r.P95MS)
	}
	if full.ProxyErrors < 1 || full.DownloadsCut < 1 || full.BytesMin >= full.SizeBytes {
		t.Errorf("full temp disk: %d proxy errors, %d downloads cut, fewest bytes %d; want errors logged and a download cut", full.ProxyErrors, full.DownloadsCut, full.BytesMin)
	}
	// The exporter reads the proxy's own tmpfs, through its mount
	// namespace: at most the tmpfs's size available (the host's disk
	// would show its own). How low it saw it is chance: the proxy frees
	// its temp files the moment it cuts the responses, so the tmpfs is
	// full for milliseconds (the embedded app writes 16 MiB in about
	// 15 ms), and a 50 ms poll sees anything from full to empty.
	if tmpfs := float64(full.TempTmpfsBytes) / (1 << 20); !full.TempFSAvailMinMiB.Valid || full.TempFSAvailMinMiB.Value > tmpfs {
		t.Errorf("full temp disk: the exporter's least temp fs space %v MiB; want the proxy's %.0f MiB tmpfs seen", full.TempFSAvailMinMiB, tmpfs)
	}
	if onDisk.ProxyErrors != 0 || onDisk.DownloadsComplete != 2 {
		t.Errorf("on disk: %d proxy errors, %d downloads complete; want 0 and 2", onDisk.ProxyErrors, onDisk.DownloadsComplete)
	}
	// Unlike the gauge, the exporter's count of failed temp writes, read
	// from the proxy's error log, does not depend on when it scraped.
	if v := full.ExporterTempWriteErrors; !v.Valid || v.Value < 1 || v.Value > float64(full.ProxyErrors) {
		t.Errorf("full temp disk: the exporter counted %v failed temp writes; want at least 1 and at most the proxy's %d error lines", v, full.ProxyErrors)
	}
	if v := onDisk.ExporterTempWriteErrors; !v.Valid || v.Value != 0 {
		t.Errorf("on disk: the exporter counted %v failed temp writes; want 0", v)
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

// workDirRE matches a run's work directory (lab.NewWorkDir).
var workDirRE = regexp.MustCompile(regexp.QuoteMeta(filepath.Join(os.TempDir(), lab.WorkDirPrefix)) + `[0-9]+-[0-9]+`)

// cmdline is process pid's command line, its arguments joined by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

// existing returns those of paths that exist, joined by spaces.
func existing(paths []string) string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// procOf is the PID of a /proc/PID/... path, 0 when it has none.
func procOf(path string) int {
	pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(path, "/proc/"), "/")[0])
	return pid
}

// descendants returns the PIDs of root's children, their children and so
// on, as /proc shows them now.
func descendants(root int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		if ppid, ok := statField(p, 1); ok {
			n, _ := strconv.Atoi(ppid)
			children[n] = append(children[n], procOf(p))
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// startTime is the process's start time (clock ticks since boot), which
// tells it from a later process given the same PID; "" when pid is gone
// or a zombie (exited, only its exit status left for its parent).
func startTime(pid int) string {
	p := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	if state, ok := statField(p, 0); !ok || state == "Z" {
		return ""
	}
	st, _ := statField(p, 19)
	return st
}

// statField returns field i of /proc/PID/stat counted from the state
// (field 3 in proc(5)), after the command name, which may hold spaces.
func statField(path string, i int) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return "", false
	}
	fields := strings.Fields(string(b[end+1:]))
	if i >= len(fields) {
		return "", false
	}
	return fields[i], true
}

func mountedAnywhere() string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if hasProxyTmpfs(filepath.Base(p)) {
			return p
		}
	}
	return ""
}

// hasProxyTmpfs reports whether process pid's mount namespace has a tmpfs
// that stack.TmpfsArgv mounted.
func hasProxyTmpfs(pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "mountinfo"))
	return err == nil && strings.Contains(string(b), " slowlab-proxy-temp ")
}

// TestTempDiskFullShapeEmbedded runs the reduced matrix on the embedded
// stack.
func TestTempDiskFullShapeEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	runShape(t, stack.NameEmbedded)
}

// TestTempDiskFullShapeReal runs it on real Gunicorn + NGINX, whose log
// has NGINX's own ENOSPC line.
func TestTempDiskFullShapeReal(t *testing.T) {
	slowlabtest.Timing(t)
	runShape(t, stack.NameReal)
}

// TestTempDiskFullInterrupted: slowlab reproduce temp-disk-full, sent
// SIGINT while the proxy's tmpfs is mounted, exits leaving no mount, no
// process of the run and no run work directory.
func TestTempDiskFullInterrupted(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "a mount namespace for the proxy's temp dir")
	bin := os.Getenv(child.ExecutableEnv)
	cmd := exec.Command(bin, "reproduce", Name, "--quick", "--stack", "embedded", "--max-host-cpu", "0", "--out", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slowlabtest.WaitFor(t, "the proxy's tmpfs to be mounted by a process of the run", func() bool {
		run := descendants(cmd.Process.Pid)
		return slices.ContainsFunc(run, func(pid int) bool { return hasProxyTmpfs(strconv.Itoa(pid)) })
	}, func() string { return fmt.Sprint("the run's processes: ", descendants(cmd.Process.Pid)) })
	// The run's processes as they are with the tmpfs mounted: the stack's
	// (app, proxy in its namespace, exporter) and their children.
	// Their command lines name the run's work directory.
	started := map[int]string{}
	var workDirs []string
	for _, pid := range descendants(cmd.Process.Pid) {
		if st := startTime(pid); st != "" {
			started[pid] = st
		}
		for _, dir := range workDirRE.FindAllString(cmdline(pid), -1) {
			if !slices.Contains(workDirs, dir) {
				workDirs = append(workDirs, dir)
			}
		}
	}
	if len(workDirs) == 0 {
		t.Errorf("no process of the run names a work directory %s", workDirRE)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	checkNothingLeft(t)
	left := func() string {
		var out []string
		for pid, st := range started {
			if startTime(pid) == st {
				out = append(out, fmt.Sprintf("%d (%s)", pid, cmdline(pid)))
			}
		}
		return strings.Join(out, ", ")
	}
	slowlabtest.WaitFor(t, fmt.Sprintf("the run's %d processes to be gone", len(started)), func() bool { return left() == "" }, left)
	slowlabtest.WaitFor(t, "the run's work directories to be gone", func() bool { return existing(workDirs) == "" },
		func() string { return existing(workDirs) })
}
