package exportercmd

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/exporter"
)

// A reload (SIGHUP) builds a new Exporter with the same counter state, so
// group "other" keeps the count of a member removed before it: without the
// shared state its OOM kills and CPU went back to the members left.
func TestReloadKeepsOtherCounters(t *testing.T) {
	root := t.TempDir()
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "cgroup.controllers"), "cpu memory pids\n")
	for _, svc := range []string{"api", "web", "worker"} {
		dir := filepath.Join(root, "system.slice", svc+".service")
		write(filepath.Join(dir, "cgroup.procs"), "")
		write(filepath.Join(dir, "cpu.stat"), "usage_usec 2000000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
		write(filepath.Join(dir, "memory.current"), "4096\n")
		write(filepath.Join(dir, "memory.events"), "oom 1\noom_kill 1\n")
	}
	f := &exporterFlags{metricsPath: "/metrics"}
	b := newBuilder(f, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	cfg := exporter.Config{Groups: []exporter.Group{{Name: "services", GroupName: "${unit}",
		Selectors: []string{`cgroup-re:system\.slice/(?P<unit>[^/]+)\.service`}}}}
	opts := exporter.Options{CgroupFS: root, MaxDynamicGroups: 1, Collectors: map[string]bool{"process": false, "sockets": false, "tempfiles": false, "errorlog": false}}
	other := func(name string) float64 {
		t.Helper()
		h, _, err := b.build(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		m := regexp.MustCompile(`(?m)^` + name + `\{group="other"\} (\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("no %s of other in\n%s", name, body)
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := other("slowlab_cgroup_oom_kills_total"); got != 2 {
		t.Fatalf("before: other has %v OOM kills, want web's and worker's", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "system.slice", "web.service")); err != nil {
		t.Fatal(err)
	}
	if got := other("slowlab_cgroup_oom_kills_total"); got != 2 {
		t.Errorf("after web's removal and a reload: other has %v OOM kills, want the 2 counted", got)
	}
	if got := other("slowlab_cgroup_cpu_usage_seconds_total"); got != 4 {
		t.Errorf("after web's removal and a reload: other has %v s of CPU, want the 4 counted", got)
	}
}
