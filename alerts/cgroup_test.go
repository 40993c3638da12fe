package alerts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// limitedCgroup creates the real cgroup slowlab/PID/alerts-NAME with
// limits l, removed when the test ends (after the processes started in
// it later are ended), and returns its path.
func limitedCgroup(t *testing.T, name string, l cgroup.Limits) *cgroup.Cgroup {
	t.Helper()
	cg, err := cgroup.New(cgroup.DefaultRoot, filepath.Join("slowlab", strconv.Itoa(os.Getpid()), "alerts-"+name), l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("remove cgroup %s: %v", cg.Path(), err)
		}
	})
	return cg
}

// startIn starts argv inside cg, ended by PID when the test ends.
func startIn(t *testing.T, cg *cgroup.Cgroup, argv ...string) *exec.Cmd {
	t.Helper()
	args := cgroup.ExecArgv(cg.ProcsFiles(), argv)
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// The cgroup alerts in a real Prometheus scraping the exporter over real
// cgroups (every `for` cut to 2 s): a busy loop under a quota of 0.1
// core is throttled in nearly every period, SlowlabCPUThrottlingHigh
// fires for its group; a process that reads /dev/zero into memory under
// a 16 MiB limit is killed by the kernel, SlowlabOOMKill fires for its
// group; a sleeping process under both limits fires neither.
func TestCgroupAlertsOnRealPrometheus(t *testing.T) {
	slowlabtest.RequireRoot(t, "creating cgroups with limits")
	_, err := cgroup.Detect(cgroup.DefaultRoot)
	slowlabtest.Require(t, err == nil, "no cgroup hierarchy mounted")
	burn := limitedCgroup(t, "burn", cgroup.Limits{CPUCores: 0.1})
	oom := limitedCgroup(t, "oom", cgroup.Limits{MemoryBytes: 16 << 20})
	calm := limitedCgroup(t, "calm", cgroup.Limits{CPUCores: 0.1, MemoryBytes: 16 << 20})
	startIn(t, burn, "sh", "-c", "while :; do :; done")
	startIn(t, calm, "sleep", "300")
	var groups []exporter.Group
	for name, cg := range map[string]*cgroup.Cgroup{"burn": burn, "oom": oom, "calm": calm} {
		groups = append(groups, exporter.Group{Name: name, Selectors: []string{"cgroup:" + cg.Path()}})
	}
	prom := rulesPrometheus(t, serveExporter(t, exporter.Config{Groups: groups}, exporter.Options{}), nil)

	// The kill must come after Prometheus has the counter at 0: an
	// increase needs a sample before it.
	slowlabtest.WaitFor(t, "2 scrapes of group oom's kills", func() bool {
		return len(prom.Query(`count_over_time(slowlab_cgroup_oom_kills_total{group="oom"}[1m]) >= 2`)) == 1
	})
	hog := startIn(t, oom, "tail", "/dev/zero")
	if err := hog.Wait(); err == nil {
		t.Fatal("tail /dev/zero under a 16 MiB limit exited without being killed")
	}
	kills, err := oom.OOMKills()
	if err != nil || kills < 1 {
		t.Fatalf("group oom: %d OOM kills (%v), want the kernel to have killed tail", kills, err)
	}

	firing := func(alert, group string) string {
		return fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing",group=%q}`, alert, group)
	}
	detail := func() string {
		return fmt.Sprintf("alerts %v; throttled/periods %v; OOM kills %v", prom.Query(`ALERTS`),
			prom.Query(`increase(slowlab_cgroup_cpu_throttled_periods_total[5m]) / increase(slowlab_cgroup_cpu_periods_total[5m])`),
			prom.Query(`slowlab_cgroup_oom_kills_total`))
	}
	slowlabtest.WaitFor(t, "SlowlabCPUThrottlingHigh firing for group burn", func() bool {
		return len(prom.Query(firing("SlowlabCPUThrottlingHigh", "burn"))) > 0
	}, detail)
	slowlabtest.WaitFor(t, "SlowlabOOMKill firing for group oom", func() bool {
		return len(prom.Query(firing("SlowlabOOMKill", "oom"))) > 0
	}, detail)
	if v := prom.Query(`max_over_time(ALERTS{group="calm"}[5m])`); len(v) > 0 {
		t.Errorf("alerts for the sleeping group: %v", v)
	}
	if v := prom.Query(`max_over_time(ALERTS{alertname="SlowlabOOMKill",group!="oom"}[5m])`); len(v) > 0 {
		t.Errorf("SlowlabOOMKill for a group with no kill: %v", v)
	}
}
