package slowclient

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// promConfig is a Prometheus configuration that scrapes the load generator
// at loadgenAddr and, through the lab's file_sd file targets.json, each
// run's exporter and components, with alerts/ loaded (a test-only short
// `for`, so alerts fire within a test).
func promConfig(t *testing.T, loadgenAddr string) (string, map[string]string) {
	t.Helper()
	rules, err := os.ReadFile("../../alerts/slowlab.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
  - job_name: slowlab-loadgen
    static_configs: [{targets: [%q]}]
  - job_name: slowlab-lab # each target's job label comes from the file
    file_sd_configs: [{files: [targets.json], refresh_interval: 1s}]
`, loadgenAddr)
	return cfg, map[string]string{"rules.yml": strings.ReplaceAll(string(rules), "for: 30s", "for: 3s"), "targets.json": "[]\n"}
}

// TestPrometheusAlertsOnRealRun runs a real Prometheus that scrapes the load
// generator and each run's exporter (found through the lab's file_sd file)
// with alerts/ loaded, during a short embedded slow-client matrix: the
// dashboards' key queries return data, and the saturation alert fires for
// the run with 2 slow clients and not for the run with none.
func TestPrometheusAlertsOnRealRun(t *testing.T) {
	slowlabtest.Timing(t)
	reg := prometheus.NewRegistry()
	metrics := loadgen.NewMetrics(reg)
	lg := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer lg.Close()
	cfg, files := promConfig(t, strings.TrimPrefix(lg.URL, "http://"))
	prom := slowlabtest.StartPrometheus(t, cfg, files)
	targets := filepath.Join(prom.Dir(), "targets.json")

	c := small(Condition{stack.RouteDirect, "sync-2", 0}, Condition{stack.RouteDirect, "sync-2", 2})
	c.Fast.Duration, c.SlowReader.ReadRate = lab.Duration(8*time.Second), 1<<20
	env := testEnv(t, stack.NameEmbedded)
	env.Metrics, env.TargetsFile = metrics, targets
	res := run(t, c, env)
	calm, busy := res.Runs[0].RunID, res.Runs[1].RunID

	// The saturation alert fires for the busy run, never for the calm one.
	slowlabtest.WaitFor(t, "SlowlabWorkersSaturated firing for "+busy, func() bool {
		return len(prom.Query(fmt.Sprintf(`ALERTS{alertname="SlowlabWorkersSaturated",alertstate="firing",run_id=%q}`, busy))) > 0
	}, func() string {
		return fmt.Sprint("p95 over the last 5 min ", prom.Query(`max_over_time(slowlab:loadgen_request_duration_seconds:p95{role="fast"}[5m])`),
			"; baseline ", prom.Query(`max_over_time(slowlab:loadgen_request_duration_seconds:p95_baseline{role="fast"}[5m])`),
			"; slow readers in flight ", prom.Query(`max_over_time(slowlab_loadgen_in_flight{role="slow"}[5m])`))
	})
	if v := prom.Query(fmt.Sprintf(`max_over_time(ALERTS{alertname="SlowlabWorkersSaturated",run_id=%q}[10m])`, calm)); len(v) > 0 {
		t.Errorf("alert fired for the run without slow clients: %v", v)
	}
	// Key dashboard queries return data from the real run.
	for _, q := range []string{
		fmt.Sprintf(`max_over_time(slowlab:loadgen_request_duration_seconds:p95{run_id=%q,role="fast"}[5m])`, busy),
		`max_over_time(slowlab:loadgen_request_duration_seconds:p95_baseline{role="fast"}[5m])`,
		fmt.Sprintf(`sum by (run_id) (increase(slowlab_loadgen_schedule_lag_seconds_count{run_id=%q}[5m]))`, busy),
		fmt.Sprintf(`max_over_time(slowlab_loadgen_in_flight{run_id=%q,role="slow"}[5m])`, busy),
		`max by (group) (max_over_time(slowlab_process_resident_memory_bytes{job="slowlab-exporter"}[5m]))`,
		`sum by (group) (rate(slowlab_process_cpu_seconds_total{job="slowlab-exporter"}[1m] @ end()))`,
		`max by (group) (max_over_time(slowlab_socket_send_queue_bytes{group="app"}[5m]))`,
		`min(min_over_time(slowlab_exporter_collector_success[5m]))`,
		`max(max_over_time(slowlab_target_slots{job="slowlab-target"}[5m]))`,
		fmt.Sprintf(`max(max_over_time(slowlab_target_busy_slots{job="slowlab-target",run_id=%q}[5m]))`, busy),
	} {
		if v := prom.Query(q); len(v) == 0 {
			t.Errorf("no data for %s", q)
		} else {
			t.Logf("%s = %v", q, v[0].Value)
		}
	}
}
