package exporter

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
func testCgroup(t *testing.T, layout cgroupLayout) (string, []string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "slowlab-test-" + hex.EncodeToString(b)
	var dirs []string
	seen := map[string]bool{}
	for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
		dir, _ := layout.controllerDir(ctrl, name)
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
	// processes' cleanups have killed and reaped them.
	t.Cleanup(func() {
		for _, d := range dirs {
			var err error
			for range 50 {
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(40 * time.Millisecond)
			}
			if err != nil {
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
// core: usage grows at about 0.1 core while throttled periods and seconds
// rise, and the memory it touched shows in the peak.
func TestRealCgroupQuotaAndPeak(t *testing.T) {
	layout, err := detectCgroups(DefaultCgroupFS)
	requireReal(t, err == nil && os.Geteuid() == 0, "needs root and a cgroup filesystem at "+DefaultCgroupFS)
	_, v1cpu := layout.v1["cpu"]
	_, v1mem := layout.v1["memory"]
	if !v1cpu || !v1mem {
		ctrls, _ := os.ReadFile(filepath.Join(layout.unified, "cgroup.subtree_control"))
		requireReal(t, strings.Contains(string(ctrls), "cpu") && strings.Contains(string(ctrls), "memory"),
			"cgroup v2 root does not delegate cpu and memory (cgroup.subtree_control: "+strings.TrimSpace(string(ctrls))+")")
	}
	name, dirs := testCgroup(t, layout)
	cpuDir, _ := layout.controllerDir("cpu", name)
	memDir, _ := layout.controllerDir("memory", name)
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
	time.Sleep(300 * time.Millisecond) // past the allocation
	v0, t0 := values(t, e), time.Now()
	time.Sleep(1500 * time.Millisecond)
	v1, t1 := values(t, e), time.Now()

	if v1["slowlab_exporter_collector_success{cgroup}"] != 1 {
		t.Fatalf("cgroup collector failed: %v", v1)
	}
	key := func(m string) string { return m + "{burn}" }
	cores := (v1[key("slowlab_cgroup_cpu_usage_seconds_total")] - v0[key("slowlab_cgroup_cpu_usage_seconds_total")]) / t1.Sub(t0).Seconds()
	t.Logf("usage %.3f cores; throttled periods %v -> %v; throttled seconds %.3f -> %.3f; peak %.0f MiB",
		cores, v0[key("slowlab_cgroup_cpu_throttled_periods_total")], v1[key("slowlab_cgroup_cpu_throttled_periods_total")],
		v0[key("slowlab_cgroup_cpu_throttled_seconds_total")], v1[key("slowlab_cgroup_cpu_throttled_seconds_total")],
		v1[key("slowlab_cgroup_memory_peak_bytes")]/(1<<20))
	if cores < 0.06 || cores > 0.14 {
		t.Errorf("CPU usage %.3f cores, want about 0.1 (the quota)", cores)
	}
	for _, m := range []string{"slowlab_cgroup_cpu_periods_total", "slowlab_cgroup_cpu_throttled_periods_total", "slowlab_cgroup_cpu_throttled_seconds_total"} {
		if !(v1[key(m)] > v0[key(m)]) {
			t.Errorf("%s did not rise: %v -> %v", m, v0[key(m)], v1[key(m)])
		}
	}
	if got := v1[key("slowlab_cgroup_cpu_limit_cores")]; got != 0.1 {
		t.Errorf("cpu limit %v cores, want 0.1", got)
	}
	if got := v1[key("slowlab_cgroup_memory_limit_bytes")]; got != limitBytes {
		t.Errorf("memory limit %v, want %d", got, limitBytes)
	}
	if got := v1[key("slowlab_cgroup_memory_peak_bytes")]; got < allocMiB<<20 {
		t.Errorf("memory peak %.0f bytes, want at least the %d MiB the burner touched", got, allocMiB)
	}
	if got := v1[key("slowlab_cgroup_memory_usage_bytes")]; got <= 0 || got > v1[key("slowlab_cgroup_memory_peak_bytes")] {
		t.Errorf("memory usage %v, want in (0, peak]", got)
	}
}

// TestRealUnlinkedTempFile holds an unlinked temp file open through two fds
// in two processes (this one and a child): it counts once, with its real
// logical and allocated sizes.
func TestRealUnlinkedTempFile(t *testing.T) {
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
	if !waitFor(5*time.Second, func() bool {
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
// to a loopback peer that never reads: its group shows a send queue and,
// where the kernel exposes wchan, a process sleeping in
// sk_stream_wait_memory.
func TestRealBlockedSender(t *testing.T) {
	ln, accepted := slowReaderListener(t)
	sender := startHelper(t, "send", []string{"SLOWLAB_ADDR=" + ln.Addr().String()})
	if !waitFor(5*time.Second, accepted) {
		t.Fatal("sender never connected")
	}
	e, err := New(Config{Groups: []Group{{Name: "sender", Selectors: []string{"pid:" + strconv.Itoa(sender.pid())}}}},
		Options{Collectors: map[string]bool{"cgroup": false, "tempfiles": false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]float64
	pidDir := filepath.Join(DefaultProcFS, strconv.Itoa(sender.pid()))
	_, stackErr := os.ReadFile(filepath.Join(pidDir, "stack"))
	blocked := waitFor(5*time.Second, func() bool {
		v = values(t, e)
		return v["slowlab_socket_send_queue_bytes{sender}"] > 0 &&
			(v["slowlab_process_wchan{sender,sk_stream_wait_memory}"] == 1 ||
				stackErr != nil && v["slowlab_process_wchan{sender,wait_woken}"] == 1)
	})
	if v["slowlab_socket_send_queue_bytes{sender}"] <= 0 {
		t.Fatalf("send queue %v, want > 0; metrics: %v", v["slowlab_socket_send_queue_bytes{sender}"], v)
	}
	if v["slowlab_sockets{sender,established}"] != 1 {
		t.Errorf("established sockets %v, want 1", v["slowlab_sockets{sender,established}"])
	}
	t.Logf("send queue %v bytes, not sent %v bytes", v["slowlab_socket_send_queue_bytes{sender}"], v["slowlab_socket_notsent_bytes{sender}"])
	if blocked {
		return
	}
	if w, _ := os.ReadFile(filepath.Join(pidDir, "wchan")); len(w) == 0 || string(w) == "0" {
		t.Logf("kernel does not expose wchan here (%q): wait-channel check skipped", w)
		return
	}
	var wchans []string
	for k, n := range v {
		if strings.HasPrefix(k, "slowlab_process_wchan") {
			wchans = append(wchans, fmt.Sprintf("%s=%v", k, n))
		}
	}
	t.Errorf("no process of the group counted in sk_stream_wait_memory (stack readable: %t); wait channels: %v", stackErr == nil, wchans)
}
