package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
)

// requireTool returns the path of a real component the test needs: missing,
// it skips, except in CI where a missing component fails the run.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not on PATH (CI=true: real components must be installed; make test installs them)", name)
		}
		t.Skipf("%s not on PATH", name)
	}
	return p
}

// requireRoot skips a test that needs root (why says what for), except in
// CI where running without root fails the run.
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s need root, and CI=true", why)
	}
	t.Skipf("%s need root", why)
}

// TestPrometheusAlertsOnRealRun runs a real Prometheus that scrapes the load
// generator and each run's exporter (found through the lab's file_sd file)
// with alerts/ loaded, during a short embedded slow-client matrix: the
// dashboards' key queries return data, and the saturation alert fires for
// the run with 2 slow clients and not for the run with none.
func TestPrometheusAlertsOnRealRun(t *testing.T) {
	bin := requireTool(t, "prometheus")
	dir := t.TempDir()

	reg := prometheus.NewRegistry()
	metrics := loadgen.NewMetrics(reg)
	lg := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer lg.Close()

	rules, err := os.ReadFile("../../alerts/slowlab.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	// A test-only short `for`, so the alert fires within the test.
	os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(strings.ReplaceAll(string(rules), "for: 30s", "for: 3s")), 0o644)
	targets := filepath.Join(dir, "targets.json")
	os.WriteFile(targets, []byte("[]\n"), 0o644)
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
  - job_name: slowlab-loadgen
    static_configs: [{targets: [%q]}]
  - job_name: slowlab-lab # each target's job label comes from the file
    file_sd_configs: [{files: [%q], refresh_interval: 1s}]
`, strings.TrimPrefix(lg.URL, "http://"), targets)
	os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644)
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waitReady(t, "http://"+addr+"/-/ready", filepath.Join(dir, "prometheus.log"))

	e := lab.DefaultSlowClient()
	e.Conditions = []lab.Condition{
		{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 0},
		{Route: lab.RouteDirect, Server: lab.PublishedServer, SlowClients: 2},
	}
	e.Reps, e.FastDuration, e.LargeSize, e.ReadRate = 1, 8*time.Second, 8<<20, 1<<20
	res, err := lab.RunSlowClient(context.Background(), e, lab.Options{Out: filepath.Join(dir, "results"), Stack: lab.Embedded{},
		Progress: testWriter{t}, Metrics: metrics, TargetsFile: targets})
	if err != nil {
		t.Fatal(err)
	}
	calm, busy := res.Runs[0].RunID, res.Runs[1].RunID

	client, _ := api.NewClient(api.Config{Address: "http://" + addr})
	prom := v1.NewAPI(client)
	query := func(q string) model.Vector {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, _, _, err := prom.Query(ctx, q, time.Now())
		if err != nil {
			t.Fatalf("query %s: %v", q, err)
		}
		return v.(model.Vector)
	}
	// The saturation alert fires for the busy run, never for the calm one.
	deadline := time.Now().Add(40 * time.Second)
	for {
		v := query(fmt.Sprintf(`ALERTS{alertname="SlowlabWorkersSaturated",alertstate="firing",run_id=%q}`, busy))
		if len(v) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SlowlabWorkersSaturated never fired for %s; p95 now %v", busy,
				query(`slowlab:loadgen_request_duration_seconds:p95{role="fast"}`))
		}
		time.Sleep(time.Second)
	}
	if v := query(fmt.Sprintf(`max_over_time(ALERTS{alertname="SlowlabWorkersSaturated",run_id=%q}[10m])`, calm)); len(v) > 0 {
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
		if v := query(q); len(v) == 0 {
			t.Errorf("no data for %s", q)
		} else {
			t.Logf("%s = %v", q, v[0].Value)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, url, logPath string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("%s not ready after 30 s:\n%s", url, b)
}
