package alerts

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// serviceTree writes a cgroup v2 tree holding the systemd services named,
// each with the files the exporter reads and no process, and returns its
// root.
func serviceTree(t *testing.T, services ...string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"cgroup.procs":   "",
		"cpu.stat":       "usage_usec 1000\nuser_usec 800\nsystem_usec 200\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		"cpu.max":        "max 100000\n",
		"memory.current": "1048576\n",
		"memory.max":     "max\n",
		"memory.events":  "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, svc := range services {
		dir := filepath.Join(root, "system.slice", svc+".service")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// serveExporter serves an exporter of cfg over cgroupFS until the test
// ends and returns its URL.
func serveExporter(t *testing.T, cfg exporter.Config, opts exporter.Options) string {
	t.Helper()
	e, err := exporter.New(cfg, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// The exporter's own alerts in a real Prometheus scraping two real
// exporters (every `for` cut to 2 s): one on a host with more services
// than its --max-dynamic-groups from the moment it starts, and a fixed
// group whose cgroup does not exist; the other on a host where
// everything fits and exists. SlowlabExporterDynamicGroupsDropped and
// SlowlabExporterCollectorFailing fire for the first and for nothing
// else. The dropped counter of an exporter that starts over the cap
// starts at its final value and never increases, so a rule on its
// increase alone never fired on such a host (a node restarted with more
// pods than the cap: their series summed into "other" unannounced).
func TestExporterAlertsOnRealPrometheus(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts Prometheus")
	services := exporter.Group{Name: "services", GroupName: "${unit}", Selectors: []string{`cgroup-re:system\.slice/(?P<unit>[^/]+)\.service`}}
	over := serveExporter(t, exporter.Config{Groups: []exporter.Group{services, {Name: "db", Selectors: []string{"cgroup:system.slice/db.service"}}}},
		exporter.Options{CgroupFS: serviceTree(t, "api", "web", "worker"), MaxDynamicGroups: 1})
	fits := serveExporter(t, exporter.Config{Groups: []exporter.Group{services, {Name: "db", Selectors: []string{"cgroup:system.slice/db.service"}}}},
		exporter.Options{CgroupFS: serviceTree(t, "api", "web", "worker", "db")})
	prom := rulesPrometheus(t, over, nil, fits)
	overInstance := strings.TrimPrefix(over, "http://")

	slowlabtest.WaitFor(t, "5 scrapes of each exporter", func() bool {
		v := prom.Query(`count_over_time(slowlab_exporter_dynamic_groups[1m]) >= 5`)
		return len(v) == 2
	})
	alerts := func(state string) string {
		return fmt.Sprintf(`ALERTS{alertname=~"SlowlabExporter.*",alertstate=~%q}`, state)
	}
	for _, name := range []string{"SlowlabExporterDynamicGroupsDropped", "SlowlabExporterCollectorFailing"} {
		slowlabtest.WaitFor(t, name+" firing for the exporter over the cap", func() bool {
			return len(prom.Query(fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing",instance=%q}`, name, overInstance))) > 0
		}, func() string {
			return fmt.Sprintf("alerts %v; dropped %v, other %v, collector success %v", prom.Query(alerts(".*")),
				prom.Query(`slowlab_exporter_dynamic_groups_dropped_total`), prom.Query(`slowlab_exporter_dynamic_groups_other`),
				prom.Query(`slowlab_exporter_collector_success == 0`))
		})
	}
	if v := prom.Query(fmt.Sprintf(`max_over_time(ALERTS{instance!=%q}[5m])`, overInstance)); len(v) > 0 {
		t.Errorf("alerts for the exporter where everything fits: %v", v)
	}
	if v := prom.Query(`max_over_time(slowlab_exporter_dynamic_groups_dropped_total[5m]) - min_over_time(slowlab_exporter_dynamic_groups_dropped_total[5m])`); len(v) != 2 || v[0].Value != 0 || v[1].Value != 0 {
		t.Errorf("dropped counters moved (%v): the case is an exporter over the cap from its start", v)
	}
}

// SlowlabOOMKill in a real Prometheus over an exporter whose group "other"
// (the services over --max-dynamic-groups 1) sums two cgroups that each
// had an OOM kill before the exporter started: removing one of them does
// not fire it. On the old code "other"'s count fell from 2 to 1, which
// Prometheus took for a counter reset, and increase() counted the kill of
// the one left as new: a false alert.
func TestOOMKillNotFiredByOtherMemberLeaving(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts Prometheus")
	tree := serviceTree(t, "api", "web", "worker")
	for _, svc := range []string{"web", "worker"} {
		if err := os.WriteFile(filepath.Join(tree, "system.slice", svc+".service", "memory.events"), []byte("low 0\nhigh 0\nmax 1\noom 1\noom_kill 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	services := exporter.Group{Name: "services", GroupName: "${unit}", Selectors: []string{`cgroup-re:system\.slice/(?P<unit>[^/]+)\.service`}}
	prom := rulesPrometheus(t, serveExporter(t, exporter.Config{Groups: []exporter.Group{services}}, exporter.Options{CgroupFS: tree, MaxDynamicGroups: 1}), nil)
	scrapes := func(members int) string {
		return fmt.Sprintf(`count_over_time((slowlab_exporter_dynamic_groups_other == %d)[1m:1s]) >= 3`, members)
	}
	state := func() string {
		return fmt.Sprintf("other's OOM kills now %v, lowest in the last minute %v; alerts %v", prom.Query(`slowlab_cgroup_oom_kills_total{group="other"}`),
			prom.Query(`min_over_time(slowlab_cgroup_oom_kills_total{group="other"}[1m])`), prom.Query(`ALERTS`))
	}
	slowlabtest.WaitFor(t, "3 s of other summing web and worker", func() bool { return len(prom.Query(scrapes(2))) > 0 }, state)
	if err := os.RemoveAll(filepath.Join(tree, "system.slice", "web.service")); err != nil {
		t.Fatal(err)
	}
	slowlabtest.WaitFor(t, "3 s of other summing worker alone", func() bool { return len(prom.Query(scrapes(1))) > 0 }, state)
	if v := prom.Query(`increase(slowlab_cgroup_oom_kills_total{group="other"}[5m]) > 0`); len(v) > 0 {
		t.Errorf("other's OOM kills increased: %v (%s)", v, state())
	}
	if v := prom.Query(`max_over_time(ALERTS{alertname="SlowlabOOMKill"}[5m])`); len(v) > 0 {
		t.Errorf("SlowlabOOMKill pending or firing: %v (%s)", v, state())
	}
}
