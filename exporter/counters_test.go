package exporter

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// otherCounters are the counters "other" publishes.
var otherCounters = []string{
	"slowlab_cgroup_cpu_usage_seconds_total",
	"slowlab_cgroup_cpu_periods_total",
	"slowlab_cgroup_cpu_throttled_periods_total",
	"slowlab_cgroup_cpu_throttled_seconds_total",
	"slowlab_cgroup_oom_kills_total",
}

// counterNode is a generated node of 4 pods of 2 containers (8 cgroups)
// with --max-dynamic-groups 3: 5 containers are summed into "other".
type counterNode struct {
	t    *testing.T
	root string
	e    *Exporter
	last map[string]float64
}

func newCounterNode(t *testing.T) *counterNode {
	cgroupFS, procFS := fleetNode(t, 4, 2)
	e, err := New(Config{Groups: nodeGroups()}, Options{ProcFS: procFS, CgroupFS: cgroupFS, MaxDynamicGroups: 3,
		Collectors: onlyCollector("cgroup"), ScrapeTimeout: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &counterNode{t: t, root: cgroupFS, e: e}
}

// others are the cgroups summed into "other" now.
func (n *counterNode) others() []string {
	n.t.Helper()
	targets, err := n.e.Targets(context.Background())
	if err != nil {
		n.t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Group == OtherGroup {
			return tg.Cgroups
		}
	}
	n.t.Fatal("no group other")
	return nil
}

// set writes a member's CPU usage (seconds) and OOM kills; its periods
// and throttling follow its CPU, so every counter moves with it.
func (n *counterNode) set(cg string, cpu float64, oomKills int) {
	n.t.Helper()
	dir := filepath.Join(n.root, cg)
	usec := int(math.Round(cpu * 1e6))
	writeFile(n.t, filepath.Join(dir, "cpu.stat"), fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec 0\nnr_periods %d\nnr_throttled %d\nthrottled_usec %d\n",
		usec, usec, usec/1000, usec/10000, usec/100))
	writeFile(n.t, filepath.Join(dir, "memory.events"), fmt.Sprintf("low 0\nhigh 0\nmax 0\noom %d\noom_kill %d\n", oomKills, oomKills))
}

// scrape gathers and checks that no counter of "other" went back, and
// that its CPU usage and OOM kills grew by want.
func (n *counterNode) scrape(step string, wantCPU, wantOOM float64) {
	n.t.Helper()
	v := values(n.t, n.e)
	for _, name := range otherCounters {
		key := name + "{other}"
		got, ok := v[key]
		if !ok {
			n.t.Fatalf("%s: %s missing", step, key)
		}
		if prev, seen := n.last[key]; seen && got < prev {
			n.t.Errorf("%s: %s went back from %v to %v", step, key, prev, got)
		}
	}
	if n.last != nil {
		cpu := `slowlab_cgroup_cpu_usage_seconds_total{other}`
		oom := `slowlab_cgroup_oom_kills_total{other}`
		if d := v[cpu] - n.last[cpu]; math.Abs(d-wantCPU) > 1e-6 {
			n.t.Errorf("%s: other's CPU grew by %v, want %v", step, d, wantCPU)
		}
		if d := v[oom] - n.last[oom]; d != wantOOM {
			n.t.Errorf("%s: other's OOM kills grew by %v, want %v", step, d, wantOOM)
		}
	}
	n.last = v
}

// "other" sums cgroups that come and go, yet its counters never go back:
// a member removed (with an OOM kill and CPU time) leaves its count in the
// sum, so the increase is what the live members counted; a member that
// joins adds its whole count; a member whose own counter goes back (its
// cgroup made again) is a reset of that member: its new count is added.
// On the old code the removal made every counter of "other" go back (the
// OOM kill gone from the sum, which Prometheus reads as a reset).
func TestOtherCountersNeverGoBack(t *testing.T) {
	n := newCounterNode(t)
	members := n.others()
	if len(members) != 5 {
		t.Fatalf("other sums %d cgroups, want 5: %v", len(members), members)
	}
	victim, live := members[0], members[1:]
	n.set(victim, 9, 1)
	n.scrape("first", 0, 0)

	if err := os.RemoveAll(filepath.Join(n.root, victim)); err != nil {
		t.Fatal(err)
	}
	for _, cg := range live {
		n.set(cg, 2.5+1, 0) // each counted one second more
	}
	n.scrape("a member with an OOM kill removed", float64(len(live)), 0)

	n.set(live[0], 3.5+0.25, 1)
	n.scrape("a live member's OOM kill", 0.25, 1)

	joined := filepath.Join(filepath.Dir(live[len(live)-1]), "cri-containerd-"+fmt.Sprintf("%064x", 1<<40)+".scope")
	if err := os.MkdirAll(filepath.Join(n.root, joined), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cgroup.procs", "memory.current", "memory.max"} {
		writeFile(t, filepath.Join(n.root, joined, f), map[string]string{"cgroup.procs": "", "memory.current": "4096\n", "memory.max": "max\n"}[f])
	}
	n.set(joined, 0.5, 0)
	n.scrape("a member joins", 0.5, 0)
	if got := n.others(); len(got) != 5 {
		t.Fatalf("other sums %v, want the 4 left and the one that joined", got)
	}

	n.set(live[1], 0.125, 0) // was 3.5: made again since
	n.scrape("a member's counter went back", 0.125, 0)

	if err := os.Remove(filepath.Join(n.root, live[2], "cpu.stat")); err != nil {
		t.Fatal(err)
	}
	n.scrape("a member's cpu.stat unreadable", 0, 0)
}

// A dynamic group's identity is its labels, taken from the cgroup path, so
// a cgroup removed and made again under the same path (a unit restarted, a
// container of the same ID) is the same series: its counters do not go
// back either, and an OOM kill counted before stays counted.
func TestDynamicGroupRecreatedNeverGoesBack(t *testing.T) {
	n := newCounterNode(t)
	targets, err := n.e.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	own := targets[0]
	n.set(own.Cgroup, 7, 2)
	key := fmt.Sprintf("slowlab_cgroup_%%s{%s,%s,%s}", own.Labels["container_id"], own.Group, own.Labels["pod_uid"])
	v := values(t, n.e)
	if v[fmt.Sprintf(key, "cpu_usage_seconds_total")] != 7 || v[fmt.Sprintf(key, "oom_kills_total")] != 2 {
		t.Fatalf("before: %v s, %v kills", v[fmt.Sprintf(key, "cpu_usage_seconds_total")], v[fmt.Sprintf(key, "oom_kills_total")])
	}
	n.set(own.Cgroup, 0.5, 0) // removed and made again
	v = values(t, n.e)
	if got, want := v[fmt.Sprintf(key, "cpu_usage_seconds_total")], 7.5; got != want {
		t.Errorf("after: %v s, want %v (7 counted before, 0.5 since)", got, want)
	}
	if got := v[fmt.Sprintf(key, "oom_kills_total")]; got != 2 {
		t.Errorf("after: %v kills, want the 2 counted before", got)
	}
}

// The state stays bounded: per live member one set of values, per series
// one retired total, and no more absent series than --max-dynamic-groups.
func TestCounterStateBounded(t *testing.T) {
	c := newCounterState(2)
	for i := range 10 {
		c.begin()
		key := fmt.Sprint("series", i)
		reads := []memberRead{}
		for j := range 3 {
			reads = append(reads, memberRead{path: fmt.Sprint("cg", i, "-", j)})
		}
		c.publish(key, reads, reads[0].s)
		c.publish("other", reads, reads[0].s)
		c.end()
	}
	if len(c.series) != 4 || len(c.series["other"].members) != 3 {
		t.Errorf("%d series (want other, the last one and 2 absent), other has %d members (want the 3 live)", len(c.series), len(c.series["other"].members))
	}
}

// A reload builds a new Exporter; given the same Options.Counters (as the
// command does) its counters go on from the old one's: "other" keeps the
// count of a member removed before the reload.
func TestCountersKeptAcrossReload(t *testing.T) {
	cgroupFS, procFS := fleetNode(t, 4, 2)
	counters := NewCounters()
	build := func() *Exporter {
		e, err := New(Config{Groups: nodeGroups()}, Options{ProcFS: procFS, CgroupFS: cgroupFS, MaxDynamicGroups: 3,
			Collectors: onlyCollector("cgroup"), ScrapeTimeout: time.Hour, Counters: counters}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	n := &counterNode{t: t, root: cgroupFS, e: build()}
	victim := n.others()[0]
	n.set(victim, 9, 1)
	n.scrape("before the reload", 0, 0)
	if err := os.RemoveAll(filepath.Join(cgroupFS, victim)); err != nil {
		t.Fatal(err)
	}
	n.e = build()
	n.scrape("after the reload, a member removed", 0, 0)
}
