package exporter

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/cgroup"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

const (
	podUID  = "6f1e2a3b-1111-2222-3333-444455556666"
	podUID2 = "0a0b0c0d-aaaa-bbbb-cccc-ddddeeeeffff"
)

// fleetGroups are the dynamic groups of a Kubernetes node and a systemd
// host: containers under the kubelet's cgroupfs and systemd drivers, and
// systemd services.
func fleetGroups() []Group {
	return []Group{
		{Name: "pods-systemd", GroupName: "ctr-${container_id}",
			Selectors: []string{`cgroup-re:kubepods.*pod(?P<pod_uid>[0-9a-f_-]+)\.slice/cri-containerd-(?P<container_id>[0-9a-f]+)\.scope`}},
		{Name: "pods-cgroupfs", GroupName: "${container_id}",
			Selectors: []string{`cgroup-re:kubepods/(?:burstable/|besteffort/)?pod(?P<pod_uid>[0-9a-f-]+)/(?P<container_id>[0-9a-f]{64})`}},
		{Name: "services", GroupName: "${unit}",
			Selectors: []string{`cgroup-re:system\.slice/(?P<unit>[^/]+)\.service`}},
	}
}

func resolveFixture(t *testing.T, tree string, max int, groups ...Group) ([]Target, dynStats) {
	t.Helper()
	compiled, err := Config{Groups: groups}.compile()
	if err != nil {
		t.Fatal(err)
	}
	r := resolver{procFS: "testdata/fixtures/proc", cgroupFS: tree, groups: compiled, maxDyn: max}
	targets, st, err := r.resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return targets, st
}

// One cgroup-re: selector makes one group per matching cgroup, labelled
// with its captures, on the kubelet's cgroupfs and systemd layouts and
// systemd services, on v1 and v2 alike; parents and non-matching cgroups
// are no group.
func TestDynamicGroupsFixtures(t *testing.T) {
	c1, c2, c3 := strings.Repeat("a", 60)+"0001", strings.Repeat("b", 60)+"0002", strings.Repeat("c", 60)+"0003"
	type want struct {
		group, cgroup string
		labels        prometheus.Labels
		pids          []int
	}
	wants := []want{
		{"ctr-" + c3, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(podUID, "-", "_") + ".slice/cri-containerd-" + c3 + ".scope",
			prometheus.Labels{"pod_uid": strings.ReplaceAll(podUID, "-", "_"), "container_id": c3}, []int{103}},
		{c2, "kubepods/besteffort/pod" + podUID2 + "/" + c2, prometheus.Labels{"pod_uid": podUID2, "container_id": c2}, []int{102}},
		{c1, "kubepods/burstable/pod" + podUID + "/" + c1, prometheus.Labels{"pod_uid": podUID, "container_id": c1}, []int{101}},
		{"gunicorn", "system.slice/gunicorn.service", prometheus.Labels{"unit": "gunicorn"}, []int{201}},
		{"nginx", "system.slice/nginx.service", prometheus.Labels{"unit": "nginx"}, []int{202}},
		{"ssh", "system.slice/ssh.service", prometheus.Labels{"unit": "ssh"}, []int{203}},
	}
	for _, tree := range []string{"dynamic-v1", "dynamic-v2"} {
		t.Run(tree, func(t *testing.T) {
			targets, st := resolveFixture(t, filepath.Join("testdata/fixtures", tree), DefaultMaxDynamicGroups, fleetGroups()...)
			if len(targets) != len(wants) || st.groups != 6 || st.other != 0 {
				t.Fatalf("%d targets (%+v), want %d", len(targets), st, len(wants))
			}
			for i, w := range wants {
				got := targets[i]
				if got.Group != w.group || got.Cgroup != w.cgroup || !equalLabels(got.Labels, w.labels) || !slices.Equal(got.PIDs, w.pids) || got.Err != nil {
					t.Errorf("target %d: %s %s %v pids %v err %v;\nwant %s %s %v pids %v", i, got.Group, got.Cgroup, got.Labels, got.PIDs, got.Err, w.group, w.cgroup, w.labels, w.pids)
				}
			}
		})
	}
}

func equalLabels(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The groups' metrics carry the captures as labels, next to a fixed
// group's, in one valid exposition.
func TestDynamicGroupsMetrics(t *testing.T) {
	groups := append(fleetGroups(), Group{Name: "app", Selectors: []string{"pid:101"}})
	e, err := New(Config{Groups: groups}, Options{ProcFS: "testdata/fixtures/proc", CgroupFS: "testdata/fixtures/dynamic-v2",
		Collectors: onlyCollector("cgroup"), dumpTCP: fixtureSockets(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := values(t, e)
	for key, want := range map[string]float64{
		`slowlab_cgroup_memory_usage_bytes{nginx,nginx}`:      52428800,
		`slowlab_cgroup_cpu_usage_seconds_total{nginx,nginx}`: 2.5,
		`slowlab_cgroup_oom_kills_total{nginx,nginx}`:         0,
		`slowlab_exporter_dynamic_groups{}`:                   6,
		`slowlab_exporter_dynamic_groups_other{}`:             0,
		`slowlab_exporter_collector_success{cgroup-re}`:       1,
	} {
		if got, ok := v[key]; !ok || got != want {
			t.Errorf("%s = %v (present %t), want %v", key, got, ok, want)
		}
	}
}

// Over --max-dynamic-groups, the later matches are summed into "other",
// whose CPU and memory are the sums of theirs; the gauge counts them.
func TestDynamicGroupsOverflowToOther(t *testing.T) {
	tree := copyTree(t, "testdata/fixtures/dynamic-v2")
	for _, svc := range []string{"gunicorn", "ssh"} {
		writeFile(t, filepath.Join(tree, "system.slice", svc+".service", "memory.current"), "1048576\n")
	}
	targets, st := resolveFixture(t, tree, 1, fleetGroups()[2])
	if st.groups != 1 || st.other != 2 || len(targets) != 2 {
		t.Fatalf("%+v, %d targets", st, len(targets))
	}
	other := targets[1]
	if other.Group != OtherGroup || !slices.Equal(other.Cgroups, []string{"system.slice/nginx.service", "system.slice/ssh.service"}) ||
		!slices.Equal(other.PIDs, []int{202, 203}) || len(other.Labels) != 0 {
		t.Errorf("other: %+v", other)
	}
	e, err := New(Config{Groups: fleetGroups()[2:]}, Options{ProcFS: "testdata/fixtures/proc", CgroupFS: tree,
		Collectors: onlyCollector("cgroup"), MaxDynamicGroups: 1, dumpTCP: fixtureSockets(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := values(t, e)
	if got := v[`slowlab_cgroup_memory_usage_bytes{other}`]; got != 52428800+1048576 {
		t.Errorf("other memory %v, want nginx's + ssh's", got)
	}
	if _, ok := v[`slowlab_cgroup_memory_limit_bytes{other}`]; ok {
		t.Error("other has a memory limit: a sum of limits is none")
	}
	if v[`slowlab_exporter_dynamic_groups_other{}`] != 2 || v[`slowlab_exporter_dynamic_groups{}`] != 1 {
		t.Errorf("gauges: %v groups, %v other", v[`slowlab_exporter_dynamic_groups{}`], v[`slowlab_exporter_dynamic_groups_other{}`])
	}
}

// A cgroup that is gone is no group at the next scrape: no stale series.
func TestDynamicGroupGone(t *testing.T) {
	tree := copyTree(t, "testdata/fixtures/dynamic-v2")
	e, err := New(Config{Groups: fleetGroups()[2:]}, Options{ProcFS: "testdata/fixtures/proc", CgroupFS: tree,
		Collectors: onlyCollector("cgroup"), dumpTCP: fixtureSockets(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := values(t, e)[`slowlab_cgroup_memory_usage_bytes{nginx,nginx}`]; !ok {
		t.Fatal("nginx not reported")
	}
	if err := os.RemoveAll(filepath.Join(tree, "system.slice/nginx.service")); err != nil {
		t.Fatal(err)
	}
	v := values(t, e)
	for k := range v {
		if strings.Contains(k, "nginx") {
			t.Errorf("%s still reported after its cgroup went", k)
		}
	}
	if v[`slowlab_exporter_dynamic_groups{}`] != 2 {
		t.Errorf("%v dynamic groups, want 2", v[`slowlab_exporter_dynamic_groups{}`])
	}
}

func TestMaxDynamicGroupsInvalid(t *testing.T) {
	_, err := New(Config{Groups: fleetGroups()}, Options{MaxDynamicGroups: -1}, nil)
	if err == nil || err.Error() != "max dynamic groups -1: want at least 1" {
		t.Errorf("err = %v", err)
	}
}

// Real cgroups: the test makes two under a cgroup of its own, runs a
// process in one, and one selector yields two groups with their labels,
// the process counted in its group only.
func TestRealDynamicGroups(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.Require(t, os.Geteuid() == 0, "needs root to create cgroups")
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	slowlabtest.Require(t, err == nil, "no cgroup hierarchy mounted")
	name, dirs := testCgroup(t, layout)
	var procs []string
	for _, unit := range []string{"api", "worker"} {
		var sub []string
		for _, d := range dirs {
			p := filepath.Join(d, unit+".service")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			sub = append(sub, p)
		}
		t.Cleanup(func() {
			for _, p := range sub {
				if !slowlabtest.Eventually(func() bool { return os.Remove(p) == nil }) {
					t.Errorf("remove %s", p)
				}
			}
		})
		if unit == "api" {
			for _, p := range sub {
				procs = append(procs, filepath.Join(p, "cgroup.procs"))
			}
		}
	}
	// The sleeper enters the api cgroups before it execs, the way the lab
	// starts its children.
	script := `for f in "$@"; do echo $$ > "$f"; done; exec sleep 600`
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, procs...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	e, err := New(Config{Groups: []Group{{Name: "units", GroupName: "${unit}",
		Selectors: []string{"cgroup-re:" + name + `/(?P<unit>[^/]+)\.service`}}}},
		Options{Collectors: map[string]bool{"cgroup": true, "process": true, "sockets": false, "tempfiles": false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]float64
	pid := strconv.Itoa(cmd.Process.Pid)
	if !slowlabtest.Eventually(func() bool {
		v = values(t, e)
		return v[`slowlab_processes{api,sleeping,api}`] == 1
	}) {
		t.Fatalf("pid %s not seen sleeping in group api: %v", pid, v)
	}
	for key, ok := range map[string]bool{
		`slowlab_cgroup_cpu_usage_seconds_total{api,api}`:      true,
		`slowlab_cgroup_memory_usage_bytes{worker,worker}`:     true,
		`slowlab_process_resident_memory_bytes{api,api}`:       true,
		`slowlab_process_resident_memory_bytes{worker,worker}`: true,
	} {
		if _, got := v[key]; got != ok {
			t.Errorf("%s present %t, want %t", key, got, ok)
		}
	}
	if v[`slowlab_process_resident_memory_bytes{api,api}`] == 0 || v[`slowlab_process_resident_memory_bytes{worker,worker}`] != 0 {
		t.Errorf("RSS api %v, worker %v: want the sleeper's in api only", v[`slowlab_process_resident_memory_bytes{api,api}`], v[`slowlab_process_resident_memory_bytes{worker,worker}`])
	}
	if v[`slowlab_exporter_dynamic_groups{}`] != 2 {
		t.Errorf("%v dynamic groups, want 2", v[`slowlab_exporter_dynamic_groups{}`])
	}
}

// Over --max-dynamic-groups, a group that has series of its own keeps
// them while its cgroup is there: a new cgroup that sorts before it goes
// to "other" (not it, whose series would vanish and whose counters would
// jump "other"'s), each group that goes over is logged once and counted in
// slowlab_exporter_dynamic_groups_dropped_total, and a freed slot goes to
// the first group in order.
func TestDynamicGroupSlotsStable(t *testing.T) {
	tree := copyTree(t, "testdata/fixtures/dynamic-v2")
	if err := os.RemoveAll(filepath.Join(tree, "system.slice/gunicorn.service")); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	e, err := New(Config{Groups: fleetGroups()[2:]}, Options{ProcFS: "testdata/fixtures/proc", CgroupFS: tree,
		Collectors: onlyCollector("cgroup"), MaxDynamicGroups: 1, dumpTCP: fixtureSockets(t)},
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	own := func(v map[string]float64) []string {
		var names []string
		for k := range v {
			if name, ok := strings.CutPrefix(k, "slowlab_cgroup_memory_usage_bytes{"); ok && !strings.HasPrefix(name, OtherGroup) {
				names = append(names, strings.TrimSuffix(name, "}"))
			}
		}
		return names
	}
	check := func(step string, wantOwn string, wantDropped float64) {
		t.Helper()
		v := values(t, e)
		if got := own(v); !slices.Equal(got, []string{wantOwn}) || v[`slowlab_exporter_dynamic_groups_dropped_total{}`] != wantDropped {
			t.Errorf("%s: own series %v, dropped %v; want %s's alone and %v dropped", step, got, v[`slowlab_exporter_dynamic_groups_dropped_total{}`], wantOwn, wantDropped)
		}
	}
	check("nginx and ssh", "nginx,nginx", 1)
	apache := filepath.Join(tree, "system.slice/apache.service")
	if err := os.MkdirAll(apache, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(apache, "cgroup.procs"), "")
	writeFile(t, filepath.Join(apache, "memory.current"), "4096\n")
	check("apache added", "nginx,nginx", 2)
	check("again", "nginx,nginx", 2)
	if err := os.RemoveAll(filepath.Join(tree, "system.slice/nginx.service")); err != nil {
		t.Fatal(err)
	}
	check("nginx gone", "apache,apache", 2)
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "over --max-dynamic-groups") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "group=ssh") || !strings.Contains(lines[1], "group=apache") {
		t.Errorf("want one line for ssh, then one for apache:\n%s", logs.String())
	}
}
