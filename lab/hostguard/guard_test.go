package hostguard

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// The host's use counts user, system, interrupt and steal time as busy and
// idle, I/O wait and niced (lower-priority) time as not.
func TestUtilisation(t *testing.T) {
	a := procfs.CPUStat{User: 100, Nice: 100, System: 100, Idle: 100, Iowait: 100}
	for _, tc := range []struct {
		name string
		d    procfs.CPUStat
		want float64
	}{
		{"all user", procfs.CPUStat{User: 10}, 1},
		{"half system, half idle", procfs.CPUStat{System: 5, Idle: 5}, 0.5},
		{"a niced hog and the run's 20%", procfs.CPUStat{Nice: 8, User: 2}, 0.2},
		{"steal and irq", procfs.CPUStat{Steal: 1, IRQ: 1, SoftIRQ: 1, Iowait: 1}, 0.75},
		{"nothing elapsed", procfs.CPUStat{}, 0},
	} {
		b := a
		b.User += tc.d.User
		b.Nice += tc.d.Nice
		b.System += tc.d.System
		b.Idle += tc.d.Idle
		b.Iowait += tc.d.Iowait
		b.IRQ += tc.d.IRQ
		b.SoftIRQ += tc.d.SoftIRQ
		b.Steal += tc.d.Steal
		if got := usage(reading{host: a}, reading{host: b}).Host; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: host use %v, want %v", tc.name, got, tc.want)
		}
	}
}

// procFixture writes a /proc tree in dir: stat's cpu line (user, system
// and idle ticks) and, for each process, its stat line (ppid, utime,
// stime, cutime, cstime; ticks).
func procFixture(t *testing.T, dir string, user, system, idle int, procs map[int][5]int) {
	t.Helper()
	stat := fmt.Sprintf("cpu  %d 0 %d %d 0 0 0 0 0 0\ncpu0 %d 0 %d %d 0 0 0 0 0 0\nbtime 1700000000\nprocesses 300\nprocs_running 2\nprocs_blocked 0\n",
		user, system, idle, user, system, idle)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	for pid, p := range procs {
		// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
		// majflt cmajflt utime stime cutime cstime, then the rest zero.
		line := fmt.Sprintf("%d (p%d) S %d 0 0 0 0 0 0 0 0 0 %d %d %d %d", pid, pid, p[0], p[1], p[2], p[3], p[4]) + strings.Repeat(" 0", 36) + "\n"
		if err := os.MkdirAll(filepath.Join(dir, strconv.Itoa(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid), "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The guard's figure is the host's busy time less the session's (process
// 100 and its descendants, live or reaped), over the interval's CPU
// time; work outside the session (process 200) stays counted, and a
// session that seems to have used more than the host clamps at 0.
func TestUsageOutsideSession(t *testing.T) {
	dir := t.TempDir()
	read := func(name string, user, system, idle int, procs map[int][5]int) reading {
		t.Helper()
		procFixture(t, filepath.Join(dir, name), user, system, idle, procs)
		fs, err := procfs.NewFS(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := (&Guard{self: 100}).read(fs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// 1 (init), 100 the session, 101 its child (the app), 102 the app's
	// child, which ends and is reaped by 101 before the second reading;
	// 200 someone else's.
	a := read("a", 10000, 2000, 8000, map[int][5]int{1: {0, 5, 5, 0, 0}, 100: {1, 400, 100, 0, 0},
		101: {100, 150, 50, 0, 0}, 102: {101, 30, 10, 0, 0}, 200: {1, 900, 0, 0, 0}})
	// 200 ticks (2 CPUs for 1 s): 150 busy (100 user, 50 system). The
	// session: 100 +30, 101 +60, 102's 40 ticks and 10 more in 101's
	// reaped time: +100 in all. 200 used the other 50.
	b := read("b", 10100, 2050, 8050, map[int][5]int{1: {0, 5, 5, 0, 0}, 100: {1, 420, 110, 0, 0},
		101: {100, 200, 60, 45, 5}, 200: {1, 950, 0, 0, 0}})
	u := usage(a, b)
	want := Usage{Host: 0.75, Session: 0.5, Outside: 0.25}
	if math.Abs(u.Host-want.Host) > 1e-9 || math.Abs(u.Session-want.Session) > 1e-9 || math.Abs(u.Outside-want.Outside) > 1e-9 {
		t.Errorf("usage %+v, want %+v", u, want)
	}
	// 20 busy ticks of 200 while the session's counters advanced 100.
	c := read("c", 10110, 2060, 8230, map[int][5]int{1: {0, 5, 5, 0, 0}, 100: {1, 470, 160, 0, 0},
		101: {100, 200, 60, 45, 5}, 200: {1, 950, 0, 0, 0}})
	if u := usage(b, c); u.Outside != 0 || math.Abs(u.Host-0.1) > 1e-9 || math.Abs(u.Session-0.5) > 1e-9 {
		t.Errorf("session over the host: usage %+v, want outside 0, host 0.1, session 0.5", u)
	}
	fs, _ := procfs.NewFS(filepath.Join(dir, "c"))
	if _, err := (&Guard{self: 300}).read(fs); err == nil || !strings.Contains(err.Error(), "session process 300: not found") {
		t.Errorf("read without the session's process: %v", err)
	}
}

// sessionCPU counts a child this process starts while it runs and, once
// it has ended and been reaped, in this process's reaped time: the
// session's figure never loses it.
func TestSessionCPUCountsChildren(t *testing.T) {
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		t.Fatal(err)
	}
	before, err := sessionCPU(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait until the child has used 0.3 s of CPU by its own counter.
	var child float64
	for child < 0.3 {
		st, err := fs.Proc(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.Stat()
		if err != nil {
			t.Fatal(err)
		}
		child = s.CPUTime()
		time.Sleep(20 * time.Millisecond) // the poll's interval, not a bound

	}
	during, err := sessionCPU(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if during-before < child {
		t.Errorf("session CPU grew %.2f s while its child used %.2f s", during-before, child)
	}
	cmd.Process.Kill()
	cmd.Wait()
	after, err := sessionCPU(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < child {
		t.Errorf("after the child was reaped: session CPU grew %.2f s, the child had used %.2f s", after-before, child)
	}
}
