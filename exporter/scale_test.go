package exporter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A Kubernetes node as the exporter sees it: a cgroup v2 tree of pods,
// each with a pause sandbox and containers, every container's cgroup
// holding one process, and a /proc of those processes. Generated into a
// temp dir; nothing is committed.

// nodeGroups are deploy/kubernetes/configmap.yaml's groups for the
// kubelet's systemd driver.
func nodeGroups() []Group {
	return []Group{{Name: "pods", GroupName: "ctr-${container_id}", SkipComm: []string{"pause"},
		Selectors: []string{`cgroup-re:(?:[^/]+\.slice/)*[^/]*kubepods[^/]*-pod(?P<pod_uid>[0-9a-f_]+)\.slice/(?:cri-containerd|crio|docker)-(?P<container_id>[0-9a-f]{64})\.scope`}}}
}

// fleetNode writes a node of pods with containers per pod (plus each
// pod's pause sandbox, which skip_comm leaves out) and returns its
// cgroup root and procfs root: pods*containers cgroups that match, as
// many processes.
func fleetNode(tb testing.TB, pods, containers int) (cgroupFS, procFS string) {
	tb.Helper()
	dir := tb.TempDir()
	cgroupFS, procFS = filepath.Join(dir, "cgroup"), filepath.Join(dir, "proc")
	write := func(p, data string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write(filepath.Join(cgroupFS, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	netstat, err := os.ReadFile("testdata/fixtures/proc/101/net/netstat")
	if err != nil {
		tb.Fatal(err)
	}
	pid := 1000
	process := func(cg, comm string) {
		pid++
		p := filepath.Join(procFS, strconv.Itoa(pid))
		write(filepath.Join(p, "stat"), fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 50 20 0 0 20 0 1 0 12345 104857600 1200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", pid, comm, pid, pid))
		write(filepath.Join(p, "comm"), comm+"\n")
		write(filepath.Join(p, "cmdline"), comm+"\x00")
		write(filepath.Join(p, "wchan"), "ep_poll")
		write(filepath.Join(p, "net", "netstat"), string(netstat))
		if err := os.MkdirAll(filepath.Join(p, "fd"), 0o755); err != nil {
			tb.Fatal(err)
		}
		for _, l := range [][2]string{{"/dev/null", "fd/0"}, {"pipe:[777]", "fd/1"}, {"net:[4026532777]", "ns/net"}} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(p, l[1])), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.Symlink(l[0], filepath.Join(p, l[1])); err != nil {
				tb.Fatal(err)
			}
		}
		write(filepath.Join(cg, "cgroup.procs"), strconv.Itoa(pid)+"\n")
		write(filepath.Join(cg, "cpu.stat"), "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 100\nnr_throttled 3\nthrottled_usec 4000\n")
		write(filepath.Join(cg, "cpu.max"), "50000 100000\n")
		write(filepath.Join(cg, "memory.current"), "52428800\n")
		write(filepath.Join(cg, "memory.peak"), "62428800\n")
		write(filepath.Join(cg, "memory.max"), "268435456\n")
		write(filepath.Join(cg, "memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
	}
	burstable := filepath.Join(cgroupFS, "kubepods.slice", "kubepods-burstable.slice")
	for i := range pods {
		uid := fmt.Sprintf("%08x_1111_2222_3333_%012x", i, i)
		pod := filepath.Join(burstable, "kubepods-burstable-pod"+uid+".slice")
		for c := range containers + 1 {
			comm := "app"
			if c == 0 {
				comm = "pause"
			}
			process(filepath.Join(pod, fmt.Sprintf("cri-containerd-%056x%08x.scope", i, c)), comm)
		}
	}
	return cgroupFS, procFS
}

// nodeExporter watches a generated node with every collector (the
// socket dump stubbed: the processes are files).
func nodeExporter(tb testing.TB, cgroupFS, procFS string, maxDyn int) *Exporter {
	tb.Helper()
	e, err := New(Config{Groups: nodeGroups(), TempDirs: []string{tb.TempDir()}}, Options{ProcFS: procFS, CgroupFS: cgroupFS,
		MaxDynamicGroups: maxDyn, ScrapeTimeout: time.Hour,
		dumpTCP: func(uint8, []uint16) ([]tcpSocket, error) { return nil, nil }}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// BenchmarkScrapeNode measures one full scrape of a node with 5,000
// containers in 2,500 pods (7,500 cgroups, as many processes) at the
// default --max-dynamic-groups and with the cap at every container. Run
// with
//
//	go test ./exporter -run '^$' -bench ScrapeNode -benchtime 10x -benchmem
func BenchmarkScrapeNode(b *testing.B) {
	cgroupFS, procFS := fleetNode(b, 2500, 2)
	for _, max := range []int{DefaultMaxDynamicGroups, 5000} {
		b.Run(fmt.Sprintf("containers=5000,max-dynamic-groups=%d", max), func(b *testing.B) {
			e := nodeExporter(b, cgroupFS, procFS, max)
			v := scrapeLoop(b, e)
			b.ReportMetric(float64(len(v)), "series")
			if got := v[`slowlab_exporter_dynamic_groups{}`] + v[`slowlab_exporter_dynamic_groups_other{}`]; got != 5000 {
				b.Errorf("dynamic groups + other = %v, want the 5000 containers", got)
			}
			for _, c := range []string{"cgroup", "cgroup-re", "process", "tempfiles", "sockets", "errorlog"} {
				if s, ok := v["slowlab_exporter_collector_success{"+c+"}"]; ok && s != 1 {
					b.Errorf("collector %s failed", c)
				}
			}
		})
	}
}

// On a node with far more containers than --max-dynamic-groups, the
// series a scrape publishes are bounded by the cap, not by the node: the
// same count for 48 containers as for 24 (each over the cap of 10),
// the matches over it summed into "other" and counted.
func TestNodeSeriesBoundedByCap(t *testing.T) {
	series := func(pods int) (int, map[string]float64) {
		cgroupFS, procFS := fleetNode(t, pods, 2)
		v := values(t, nodeExporter(t, cgroupFS, procFS, 10))
		return len(v), v
	}
	small, _ := series(12)
	big, v := series(24)
	if small != big {
		t.Errorf("%d series for 24 containers, %d for 48: want the same, bounded by --max-dynamic-groups", small, big)
	}
	if got := v[`slowlab_exporter_dynamic_groups{}`]; got != 10 {
		t.Errorf("dynamic groups %v, want the cap of 10", got)
	}
	if got := v[`slowlab_exporter_dynamic_groups_other{}`]; got != 38 {
		t.Errorf("summed into other %v, want 38", got)
	}
	groups := map[string]bool{}
	for key := range v {
		if strings.HasPrefix(key, "slowlab_processes{") {
			groups[strings.SplitN(strings.TrimPrefix(key, "slowlab_processes{"), ",", 2)[0]] = true
		}
	}
	if len(groups) != 11 {
		t.Errorf("%d groups with process series, want 10 and other", len(groups))
	}
	t.Logf("%d series for 48 containers over a cap of 10", big)
}

// countdownCtx is a context whose deadline passes after its Err has
// answered nil n times: a scrape's deadline at a chosen step.
type countdownCtx struct {
	context.Context
	left atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// On a big node the walk of the cgroup tree is not all a scrape spends
// before its collectors run: reading every match's processes (skip_comm,
// then each group's and "other"'s) took as long again. A scrape whose
// deadline passes after the walk stops there, not after reading them
// all (which overran Prometheus's scrape_timeout: a scrape of 5,000
// containers asked to end in 1 s answered after 1.26 s).
func TestResolveStopsAtDeadline(t *testing.T) {
	const pods, containers = 20, 2
	cgroupFS, procFS := fleetNode(t, pods, containers)
	walked := 2 + pods + pods*(containers+1) // the two slices, the pods, their scopes
	for _, tc := range []struct {
		name string
		left int
	}{
		{"after the walk", walked},
		{"after skip_comm", walked + pods*(containers+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := nodeExporter(t, cgroupFS, procFS, 10)
			ctx := &countdownCtx{Context: context.Background()}
			ctx.left.Store(int64(tc.left))
			targets, _, err := e.resolver.resolve(ctx)
			for _, tg := range targets {
				if len(tg.PIDs) > 0 {
					t.Errorf("group %s: %d processes read after the deadline", tg.Group, len(tg.PIDs))
				}
				if err == nil && !errors.Is(tg.Err, context.DeadlineExceeded) {
					t.Errorf("group %s: error %v, want the deadline", tg.Group, tg.Err)
				}
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("resolve: %v, want the deadline", err)
			}
			if err == nil && len(targets) != 11 {
				t.Errorf("%d targets, want the 10 groups and other, each with the deadline as its error", len(targets))
			}
		})
	}
}
