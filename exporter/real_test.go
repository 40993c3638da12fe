package exporter

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// onlyCollector enables one collector.
func onlyCollector(name string) map[string]bool {
	m := map[string]bool{}
	for _, c := range Collectors() {
		m[c.Name] = c.Name == name
	}
	return m
}

// testCgroup creates slowlab-test-<random> in every hierarchy that holds
// cpu, cpuacct or memory, and removes it in t.Cleanup. It returns the
// cgroup's name and its directories.
func testCgroup(t *testing.T, layout cgroup.Layout) (string, []string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "slowlab-test-" + hex.EncodeToString(b)
	var dirs []string
	seen := map[string]bool{}
	for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
		dir, _ := layout.Dir(ctrl, name)
		if real, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
			dir = filepath.Join(real, name)
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("create test cgroup: %v", err)
		}
		dirs = append(dirs, dir)
	}
	// Registered before any process starts, so it runs after the
	// processes' cleanups have killed and reaped them; the kernel may
	// still take a moment to let go of the cgroup.
	t.Cleanup(func() {
		for _, d := range dirs {
			var err error
			if !slowlabtest.Eventually(func() bool {
				err = syscall.Rmdir(d)
				return err == nil || errors.Is(err, syscall.ENOENT)
			}) {
				t.Errorf("remove test cgroup %s: %v", d, err)
			}
		}
	})
	return name, dirs
}

func writeFile(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// TestRealCgroupQuotaAndPeak puts a CPU burner in a cgroup limited to 0.1
// core: usage grows by no more than the quota allows, throttled periods and
// seconds rise, and the memory it touched shows in usage and the peak.
func TestRealCgroupQuotaAndPeak(t *testing.T) {
	slowlabtest.Timing(t)
	layout, err := cgroup.Detect(DefaultCgroupFS)
	slowlabtest.Require(t, err == nil && os.Geteuid() == 0, "needs root and a cgroup filesystem at "+DefaultCgroupFS)
	_, v1cpu := layout.V1["cpu"]
	_, v1mem := layout.V1["memory"]
	if !v1cpu || !v1mem {
		ctrls, _ := os.ReadFile(filepath.Join(layout.Unified, "cgroup.subtree_control"))
		slowlabtest.Require(t, strings.Contains(string(ctrls), "cpu") && strings.Contains(string(ctrls), "memory"),
			"cgroup v2 root does not delegate cpu and memory (cgroup.subtree_control: "+strings.TrimSpace(string(ctrls))+")")
	}
	name, dirs := testCgroup(t, layout)
	cpuDir, _ := layout.Dir("cpu", name)
	memDir, _ := layout.Dir("memory", name)
	const limitBytes = 256 << 20
	if v1cpu {
		writeFile(t, filepath.Join(cpuDir, "cpu.cfs_period_us"), "100000")
		writeFile(t, filepath.Join(cpuDir, "cpu.cfs_quota_us"), "10000")
	} else {
		writeFile(t, filepath.Join(cpuDir, "cpu.max"), "10000 100000")
	}
	if v1mem {
		writeFile(t, filepath.Join(memDir, "memory.limit_in_bytes"), strconv.Itoa(limitBytes))
	} else {
		writeFile(t, filepath.Join(memDir, "memory.max"), strconv.Itoa(limitBytes))
	}

	const allocMiB = 64
	burner := startHelper(t, "burn", []string{"SLOWLAB_ALLOC_MIB=" + strconv.Itoa(allocMiB)})
	for _, d := range dirs {
		writeFile(t, filepath.Join(d, "cgroup.procs"), strconv.Itoa(burner.pid()))
	}
	if _, err := burner.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}

	e, err := New(Config{Groups: []Group{{Name: "burn", Selectors: []string{"cgroup:" + name}}}},
		Options{Collectors: onlyCollector("cgroup")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := func(m string) string { return m + "{burn}" }
	var v0, v1 map[string]float64
	// The burner has touched its memory once the cgroup is charged for it.
	if !slowlabtest.Eventually(func() bool {
		v0 = values(t, e)
		return v0[key("slowlab_cgroup_memory_usage_bytes")] >= allocMiB<<20
	}) {
		t.Fatalf("memory usage %.0f MiB, never the %d MiB the burner touches; metrics: %v",
			v0[key("slowlab_cgroup_memory_usage_bytes")]/(1<<20), allocMiB, v0)
	}

	// A window of at least 10 CFS periods with the burner runnable, in 3 of
	// which it used up its quota. A busy machine may give it less than the
	// quota, never more, so only the quota bounds the usage from above. t0
	// and t1 enclose both reads, so the window is if anything overestimated.
	const quota, period = 0.01, 0.1 // seconds
	t0 := time.Now()
	v0 = values(t, e)
	var t1 time.Time
	if !slowlabtest.Eventually(func() bool {
		v1, t1 = values(t, e), time.Now()
		return v1[key("slowlab_cgroup_cpu_periods_total")] >= v0[key("slowlab_cgroup_cpu_periods_total")]+10 &&
			v1[key("slowlab_cgroup_cpu_throttled_periods_total")] >= v0[key("slowlab_cgroup_cpu_throttled_periods_total")]+3
	}) {
		t.Fatalf("periods %v -> %v, throttled periods %v -> %v: the burner never ran into its quota",
			v0[key("slowlab_cgroup_cpu_periods_total")], v1[key("slowlab_cgroup_cpu_periods_total")],
			v0[key("slowlab_cgroup_cpu_throttled_periods_total")], v1[key("slowlab_cgroup_cpu_throttled_periods_total")])
	}

	if v1["slowlab_exporter_collector_success{cgroup}"] != 1 {
		t.Fatalf("cgroup collector failed: %v", v1)
	}
	used := v1[key("slowlab_cgroup_cpu_usage_seconds_total")] - v0[key("slowlab_cgroup_cpu_usage_seconds_total")]
	window := t1.Sub(t0).Seconds()
	throttled := v1[key("slowlab_cgroup_cpu_throttled_periods_total")] - v0[key("slowlab_cgroup_cpu_throttled_periods_total")]
	t.Logf("usage %.3f s in %.3f s (%.3f cores); throttled periods %v -> %v; throttled seconds %.3f -> %.3f",
		used, window, used/window, v0[key("slowlab_cgroup_cpu_throttled_periods_total")], v1[key("slowlab_cgroup_cpu_throttled_periods_total")],
		v0[key("slowlab_cgroup_cpu_throttled_seconds_total")], v1[key("slowlab_cgroup_cpu_throttled_seconds_total")])
	// At most the quota of every period the window touches, plus one
	// period's worth for runtime the kernel lets run over (and reclaims
	// from the next period).
	if most := quota*(window/period+2) + quota; used > most {
		t.Errorf("CPU usage %.3f s in %.3f s, more than the 0.1-core quota allows (%.3f s)", used, window, most)
	}
	// A period ends throttled only once the quota was used up in it.
	if least := quota * throttled / 2; used < least {
		t.Errorf("CPU usage %.3f s, less than half the quota of the %v throttled periods (%.3f s)", used, throttled, least)
	}
	if m := "slowlab_cgroup_cpu_throttled_seconds_total"; !(v1[key(m)] > v0[key(m)]) {
		t.Errorf("%s did not rise: %v -> %v", m, v0[key(m)], v1[key(m)])
	}
	if got := v1[key("slowlab_cgroup_cpu_limit_cores")]; got != 0.1 {
		t.Errorf("cpu limit %v cores, want 0.1", got)
	}
	if got := v1[key("slowlab_cgroup_memory_limit_bytes")]; got != limitBytes {
		t.Errorf("memory limit %v, want %d", got, limitBytes)
	}
	peak, ok := v1[key("slowlab_cgroup_memory_peak_bytes")]
	if got := v1[key("slowlab_cgroup_memory_usage_bytes")]; got <= 0 || ok && got > peak {
		t.Errorf("memory usage %v, want in (0, peak %v]", got, peak)
	}
	// Last, as a missing peak skips the test outside CI.
	slowlabtest.Require(t, ok, "the kernel has no memory peak for the cgroup (memory.peak needs Linux 5.19 on cgroup v2)")
	if peak < allocMiB<<20 {
		t.Errorf("memory peak %.0f bytes, want at least the %d MiB the burner touched", peak, allocMiB)
	}
}

// TestRealUnlinkedTempFile holds an unlinked temp file open through two fds
// in two processes (this one and a child): it counts once, with its real
// logical and allocated sizes.
func TestRealUnlinkedTempFile(t *testing.T) {
	slowlabtest.Timing(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy-temp-1")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 300_000
	if _, err := f.Write(bytes.Repeat([]byte("slowlab "), size/8)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	holder := startHelper(t, "hold", nil, f) // the child's fd 3
	childFD := filepath.Join(DefaultProcFS, strconv.Itoa(holder.pid()), "fd", "3")
	if !slowlabtest.Eventually(func() bool {
		link, err := os.Readlink(childFD)
		return err == nil && strings.HasSuffix(link, "proxy-temp-1 (deleted)")
	}) {
		t.Fatalf("child does not hold the unlinked file at %s", childFD)
	}
	e, err := New(Config{Groups: []Group{{
		Name:      "proxy",
		Selectors: []string{"pid:" + strconv.Itoa(os.Getpid()), "pid:" + strconv.Itoa(holder.pid())},
		TempDirs:  []string{dir},
	}}}, Options{Collectors: onlyCollector("tempfiles")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := values(t, e)
	want := map[string]float64{
		"slowlab_proxy_temp_files{proxy}":               1,
		"slowlab_proxy_temp_logical_bytes{proxy}":       size,
		"slowlab_proxy_temp_allocated_bytes{proxy}":     float64(st.Blocks * 512),
		"slowlab_exporter_collector_success{tempfiles}": 1,
	}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %v, want %v", k, v[k], w)
		}
	}
	if st.Blocks*512 < size {
		t.Logf("note: file system allocated %d bytes for %d (compressed or sparse)", st.Blocks*512, size)
	}
}

// TestRealBlockedSender connects a child that writes with blocking syscalls
// to a loopback peer that never reads: its group shows a send queue, the
// part of it the peer's closed window keeps unsent, and a process sleeping
// in sk_stream_wait_memory. Outside CI, a kernel that hides any of these
// skips the test with the reason; in CI (CI=true) it fails.
func TestRealBlockedSender(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.Require(t, tcpInfoHasNotsent(t), "the kernel's tcp_info has no tcpi_notsent_bytes (Linux 4.6+)")
	ln, accepted := slowReaderListener(t)
	sender := startHelper(t, "send", []string{"SLOWLAB_ADDR=" + ln.Addr().String()})
	if !slowlabtest.Eventually(accepted) {
		t.Fatal("sender never connected")
	}
	e, err := New(Config{Groups: []Group{{Name: "sender", Selectors: []string{"pid:" + strconv.Itoa(sender.pid())}}}},
		Options{Collectors: map[string]bool{"cgroup": false, "tempfiles": false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		// The sender connected out: its socket is on the connected side.
		sendQueue = "slowlab_socket_send_queue_bytes{sender,connected}"
		notSent   = "slowlab_socket_notsent_bytes{sender,connected}"
		sleeping  = "slowlab_processes{sender,sleeping}"
	)
	// The peer never reads, so once its window is closed the data in the
	// send queue stays unsent and the writer sleeps for good.
	var v map[string]float64
	if !slowlabtest.Eventually(func() bool {
		v = values(t, e)
		return v[sendQueue] > 0 && v[notSent] > 0 && v[sleeping] == 1
	}) {
		t.Fatalf("sender never blocked: send queue %v, not sent %v, sleeping %v; metrics: %v", v[sendQueue], v[notSent], v[sleeping], v)
	}
	t.Logf("send queue %v bytes, not sent %v bytes", v[sendQueue], v[notSent])
	if v[notSent] > v[sendQueue] {
		t.Errorf("not sent %v bytes, more than the send queue (%v) it is part of", v[notSent], v[sendQueue])
	}
	if v["slowlab_sockets{sender,established}"] != 1 {
		t.Errorf("established sockets %v, want 1", v["slowlab_sockets{sender,established}"])
	}
	if v["slowlab_exporter_collector_success{sockets}"] != 1 || v["slowlab_exporter_collector_success{process}"] != 1 {
		t.Errorf("collector failed: %v", v)
	}

	// The sender sleeps now, but it wakes whenever the peer's receive
	// buffer grows and takes more (wchan reads "0" while it runs): a wait
	// channel that stays "0" means the kernel hides it.
	pidDir := filepath.Join(DefaultProcFS, strconv.Itoa(sender.pid()))
	var w []byte
	if !slowlabtest.Eventually(func() bool {
		w, err = os.ReadFile(filepath.Join(pidDir, "wchan"))
		return err == nil && len(w) > 0 && string(w) != "0"
	}) {
		slowlabtest.Require(t, false, fmt.Sprintf("the kernel does not expose /proc/PID/wchan (read %q, %v)", w, err))
	}
	_, stackErr := os.ReadFile(filepath.Join(pidDir, "stack"))
	const blocked, generic = "slowlab_process_wchan{sender,sk_stream_wait_memory}", "slowlab_process_wchan{sender,wait_woken}"
	if !slowlabtest.Eventually(func() bool {
		v = values(t, e)
		return v[blocked] == 1 || stackErr != nil && v[generic] == 1
	}) {
		var wchans []string
		for k, n := range v {
			if strings.HasPrefix(k, "slowlab_process_wchan") {
				wchans = append(wchans, fmt.Sprintf("%s=%v", k, n))
			}
		}
		t.Fatalf("no process of the group counted in sk_stream_wait_memory (stack readable: %t); wait channels: %v", stackErr == nil, wchans)
	}
	// Since sk_wait_event sleeps in wait_woken, only the kernel stack tells
	// a blocked write from a blocked read.
	slowlabtest.Require(t, v[blocked] == 1, fmt.Sprintf(
		"/proc/PID/stack is unreadable (%v) and the kernel names the generic wait_woken: a blocked write cannot be told from a blocked read", stackErr))
}

// TestRealQuietClient has a blocking reader (a sync worker waiting for a
// request) accept a connection whose client sends nothing: the reader
// sleeps in sk_wait_data, and the connection counts as quiet on the
// accepted side once 10 s pass without data, and no longer once the client
// sends a byte.
func TestRealQuietClient(t *testing.T) {
	slowlabtest.EndToEnd(t, "it watches real sockets for seconds")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	reader := startHelper(t, "recv", nil, lf)
	// start precedes the connection, the cause of the quiet time: it
	// cannot be seen quiet for 10 s sooner than 10 s after start.
	start := time.Now()
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	e, err := New(Config{Groups: []Group{{Name: "reader", Selectors: []string{"pid:" + strconv.Itoa(reader.pid())}}}},
		Options{Collectors: map[string]bool{"cgroup": false, "tempfiles": false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		quiet10  = "slowlab_sockets_quiet{reader,10s,accepted}"
		quiet60  = "slowlab_sockets_quiet{reader,60s,accepted}"
		reading  = "slowlab_process_wchan{reader,sk_wait_data}"
		accepted = "slowlab_sockets{reader,established}"
	)
	var v map[string]float64
	if !slowlabtest.Eventually(func() bool { v = values(t, e); return v[quiet10] == 1 }) {
		t.Fatalf("the idle client's connection never counted as quiet for 10 s: %v", v)
	}
	if held := time.Since(start); held < 9*time.Second {
		t.Errorf("quiet for 10 s after %v", held)
	}
	if v[quiet60] != 0 || v[accepted] != 1 {
		t.Errorf("quiet 60s %v (want 0), established %v (want 1)", v[quiet60], v[accepted])
	}
	// stdin, stdout, stderr, the listener and the accepted connection.
	if fds, err := os.ReadDir(filepath.Join(DefaultProcFS, strconv.Itoa(reader.pid()), "fd")); err != nil || v["slowlab_process_open_fds{reader}"] != float64(len(fds)) || len(fds) < 5 {
		t.Errorf("open fds %v, /proc/PID/fd has %d entries (%v), want the same and at least 5", v["slowlab_process_open_fds{reader}"], len(fds), err)
	}
	if _, stackErr := os.ReadFile(filepath.Join(DefaultProcFS, strconv.Itoa(reader.pid()), "stack")); stackErr == nil && v[reading] != 1 {
		var wchans []string
		for k, n := range v {
			if strings.HasPrefix(k, "slowlab_process_wchan") && n > 0 {
				wchans = append(wchans, fmt.Sprintf("%s=%v", k, n))
			}
		}
		t.Errorf("the reader is not counted in sk_wait_data: %v", wchans)
	}
	if _, err := client.Write([]byte("G")); err != nil {
		t.Fatal(err)
	}
	if !slowlabtest.Eventually(func() bool { v = values(t, e); return v[quiet10] == 0 }) {
		t.Fatalf("the connection still counts as quiet after the client sent a byte: %v", v[quiet10])
	}
}

// tcpInfoHasNotsent reports whether the kernel's struct tcp_info reaches
// tcpi_notsent_bytes (Linux 4.6+), which sock_diag reports in the same
// struct: a shorter one leaves slowlab_socket_notsent_bytes at 0.
func tcpInfoHasNotsent(t *testing.T) bool {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, ok := slowlabtest.NotSent(t, c)
	return ok
}

// TestRealCloseWait: connections whose clients closed while the process
// never closed its end (the keep-alive leak of SlowlabCloseWaitGrowing)
// are counted in close_wait, and leave it when the process closes them.
func TestRealCloseWait(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 5
	var held []net.Conn
	for range n {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
		c.Close() // the client leaves; this process keeps s open
	}
	e, err := New(Config{Groups: []Group{{Name: "self", Selectors: []string{"pid:" + strconv.Itoa(os.Getpid())}}}},
		Options{Collectors: map[string]bool{"cgroup": false, "tempfiles": false, "process": false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const closeWait = "slowlab_sockets{self,close_wait}"
	var v map[string]float64
	if !slowlabtest.Eventually(func() bool { v = values(t, e); return v[closeWait] == n }) {
		t.Fatalf("close_wait %v, want the %d connections whose clients left", v[closeWait], n)
	}
	for _, s := range held {
		s.Close()
	}
	if !slowlabtest.Eventually(func() bool { v = values(t, e); return v[closeWait] == 0 }) {
		t.Fatalf("close_wait %v after the process closed them, want 0", v[closeWait])
	}
}
