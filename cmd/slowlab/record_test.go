package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slowlab/slowlab/recorder"
)

func TestRecordBadInput(t *testing.T) {
	const scrape = "http://127.0.0.1:9817/metrics"
	const prom = "http://127.0.0.1:9090"
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"record", "--out", "x"}, "slowlab record: --scrape or --prometheus is required, e.g. --scrape http://127.0.0.1:9817/metrics"},
		{[]string{"record", "--scrape", scrape, "--prometheus", prom, "--out", "x"}, "slowlab record: --scrape and --prometheus: give one, not both"},
		{[]string{"record", "--scrape", scrape}, "slowlab record: --out is required: the directory to write resource-samples.csv to"},
		{[]string{"record", "--scrape", "http://10.1.2.3:9817/metrics", "--out", "x"}, `slowlab record: --scrape "http://10.1.2.3:9817/metrics": 10.1.2.3 is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-remote`},
		{[]string{"record", "--scrape", scrape, "--scrape", "ftp://127.0.0.1/m", "--out", "x"}, `slowlab record: --scrape "ftp://127.0.0.1/m": scheme "ftp" not supported (want http://HOST:PORT/PATH)`},
		{[]string{"record", "--scrape", scrape, "--interval", "0s", "--out", "x"}, "slowlab record: --interval 0s: want a positive duration, such as 200ms"},
		{[]string{"record", "--scrape", scrape, "--interval", "often", "--out", "x"}, `slowlab record: invalid value "often" for flag -interval: parse error (see --help)`},
		{[]string{"record", "--scrape", scrape, "--timeout", "-1s", "--out", "x"}, "slowlab record: --timeout -1s: want a positive duration, or 0 for --interval"},
		{[]string{"record", "--scrape", scrape, "--duration", "-5s", "--out", "x"}, "slowlab record: --duration -5s: want a positive duration, or 0 to record until interrupted"},
		{[]string{"record", "--scrape", scrape, "--start", "2026-01-02T15:04:05Z", "--out", "x"}, "slowlab record: --start: only allowed with --prometheus"},
		{[]string{"record", "--scrape", scrape, "--step", "1s", "--out", "x"}, "slowlab record: --step: only allowed with --prometheus"},
		{[]string{"record", "--prometheus", "http://192.168.1.1:9090", "--out", "x"}, `slowlab record: --prometheus "http://192.168.1.1:9090": 192.168.1.1 is not a loopback address`},
		{[]string{"record", "--prometheus", prom, "--out", "x"}, "slowlab record: --run-id is required with --prometheus: the run_id of the rows"},
		{[]string{"record", "--prometheus", prom, "--run-id", "r", "--out", "x"}, "slowlab record: --start is required with --prometheus, as RFC 3339 such as 2026-01-02T15:04:05Z"},
		{[]string{"record", "--prometheus", prom, "--run-id", "r", "--start", "yesterday", "--out", "x"}, `slowlab record: --start "yesterday": want an RFC 3339 time such as 2026-01-02T15:04:05Z`},
		{[]string{"record", "--prometheus", prom, "--run-id", "r", "--start", "2026-01-02T15:04:05Z", "--out", "x"}, "slowlab record: --end is required with --prometheus"},
		{[]string{"record", "--prometheus", prom, "--run-id", "r", "--start", "2026-01-02T15:04:05Z", "--end", "2026-01-02T15:04:05Z", "--out", "x"}, "slowlab record: --end 2026-01-02T15:04:05Z: must be after --start 2026-01-02T15:04:05Z"},
		{[]string{"record", "--prometheus", prom, "--run-id", "r", "--start", "2026-01-02T15:04:05Z", "--end", "2026-01-02T15:05:05Z", "--step", "0s", "--out", "x"}, "slowlab record: --step 0s: want 1ms or more, such as 200ms"},
		{[]string{"record", "--prometheus", prom, "--run-id", "r", "--interval", "1s", "--out", "x"}, "slowlab record: --interval: only allowed with --scrape"},
		{[]string{"record", "--scrape", scrape, "--out", "x", "extra"}, `slowlab record: unexpected argument "extra" (see --help)`},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("stderr:\n%s\nwant one line starting %q", stderr, tc.want)
			}
		})
	}
}

func TestRecordHelp(t *testing.T) {
	code, stdout, stderr := runCmd(t, "record", "--help")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage: slowlab record --scrape URL") {
		t.Errorf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
}

// TestRecordScrape records a registry with a few contract metrics for
// 600 ms at 100 ms into resource-samples.csv.
func TestRecordScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	mem := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slowlab_cgroup_memory_usage_bytes", Help: "h"}, []string{"group"})
	temp := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slowlab_proxy_temp_logical_bytes", Help: "h"}, []string{"group"})
	reg.MustRegister(mem, temp)
	mem.WithLabelValues("app").Set(1 << 27)
	temp.WithLabelValues("proxy").Set(3 << 20)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer srv.Close()

	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "record", "--scrape", srv.URL+"/metrics", "--interval", "100ms", "--duration", "650ms", "--out", dir, "--run-id", "t1")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(dir, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 5*3 || len(rows)%3 != 0 {
		t.Fatalf("got %d rows, want 3 per tick for about 6 ticks", len(rows))
	}
	for _, r := range rows {
		wantMem, wantTemp := recorder.None(), recorder.None()
		switch r.Component {
		case "app":
			wantMem = recorder.Some(1 << 27)
		case "proxy":
			wantTemp = recorder.Some(3 << 20)
		}
		if r.RunID != "t1" || r.Error != "" || r.MemoryBytes != wantMem || r.TempLogicalBytes != wantTemp || r.CPUSeconds.Valid {
			t.Errorf("row %+v", r)
		}
	}
	for _, want := range []string{"wrote " + strconv.Itoa(len(rows)) + " rows (0 with errors)", "sampling jitter: p50 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The file holds measurements: a second recording must not replace it.
	if code, _, stderr := runCmd(t, "record", "--scrape", srv.URL, "--duration", "1ms", "--out", dir); code != 1 || !strings.Contains(stderr, "file exists") {
		t.Errorf("second record into %s: exit %d, stderr %q", dir, code, stderr)
	}
}

// TestRecordPrometheus reads from a stand-in Prometheus API that has the
// app's memory for the first two steps only. (recorder's tests run the
// real Prometheus.)
func TestRecordPrometheus(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path != "/api/v1/query_range" {
			http.NotFound(w, r)
			return
		}
		result := "[]"
		if strings.Contains(r.Form.Get("query"), "slowlab_cgroup_memory_usage_bytes") {
			start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
			result = fmt.Sprintf(`[{"metric":{"group":"app"},"values":[[%.3f,"1024"],[%.3f,"2048"]]}]`, start, start+0.5)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":%s}}`, result)
	}))
	defer api.Close()

	dir := t.TempDir()
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	code, stdout, stderr := runCmd(t, "record", "--prometheus", api.URL, "--run-id", "p1",
		"--start", start.Format(time.RFC3339), "--end", start.Add(1500*time.Millisecond).Format(time.RFC3339Nano), "--step", "500ms", "--out", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(dir, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4*3 {
		t.Fatalf("got %d rows, want 4 steps x 3 components", len(rows))
	}
	for i, r := range rows {
		step, comp := i/3, recorder.Components[i%3]
		want := recorder.ResourceSample{RunID: "p1", TS: float64(step) * 0.5, Component: comp}
		switch {
		case step >= 2:
			want.Error = recorder.ErrNoPromSamples.Error()
		case comp == "app":
			want.MemoryBytes = recorder.Some(float64(int(1024) << step))
		}
		if r != want {
			t.Errorf("row %d: got %+v, want %+v", i, r, want)
		}
	}
	if !strings.Contains(stdout, "wrote 12 rows (6 without samples)") {
		t.Errorf("stdout: %s", stdout)
	}
}
