package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/slowlab/slowlab/internal/slowlabtest"
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
		{[]string{"record", "--prometheus", prom, "--out", "x"}, "slowlab record: --run-id or --selector is required with --prometheus: without one, the series of every run and every other exporter with the same group names would be summed"},
		{[]string{"record", "--prometheus", prom, "--selector", `{run_id="A"`, "--out", "x"}, `slowlab record: --selector '{run_id="A"': 1:12: parse error: unexpected end of input inside braces; want label matchers in braces, such as {run_id="r1"}`},
		{[]string{"record", "--prometheus", prom, "--selector", `run_id="A"`, "--out", "x"}, `slowlab record: --selector 'run_id="A"': 1:7: parse error: unexpected "="; want label matchers in braces, such as {run_id="r1"}`},
		{[]string{"record", "--prometheus", prom, "--selector", `slowlab_processes{run_id="A"}`, "--out", "x"}, `slowlab record: --selector 'slowlab_processes{run_id="A"}': matches the metric name (__name__="slowlab_processes"); want label matchers only, such as {run_id="r1"}: the queries name their own metrics`},
		{[]string{"record", "--prometheus", prom, "--selector", `{}`, "--run-id", "A", "--out", "x"}, `slowlab record: --selector '{}': every matcher matches an empty label, so it selects the series of every run and every other exporter; want one that needs a value, such as {run_id="r1"}`},
		{[]string{"record", "--prometheus", prom, "--selector", `{job="slowlab-exporter"}`, "--out", "x"}, `slowlab record: --selector '{job="slowlab-exporter"}' has no run_id="..." matcher: give --run-id for the rows' run_id`},
		{[]string{"record", "--prometheus", prom, "--selector", `{run_id="B"}`, "--run-id", "A", "--out", "x"}, `slowlab record: --run-id A and --selector '{run_id="B"}' name different runs: the rows would be labelled with a run they do not come from`},
		{[]string{"record", "--scrape", scrape, "--selector", `{run_id="A"}`, "--out", "x"}, "slowlab record: --selector: only allowed with --prometheus"},
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
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(dir, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// A loaded machine may skip a tick or time a scrape out: those rows
	// say so and hold no values, and stderr says their errors; every other
	// row is exact, and stderr says nothing else.
	if len(rows) == 0 || len(rows)%3 != 0 {
		t.Fatalf("got %d rows, want 3 per tick", len(rows))
	}
	isLoadErr := func(e string) bool {
		return strings.HasPrefix(e, recorder.ErrTickSkipped.Error()) || strings.Contains(e, ": timed out after 100ms")
	}
	for line := range strings.Lines(stderr) {
		if e, ok := strings.CutSuffix(line, " (recording goes on; each row says its error)\n"); !ok || !isLoadErr(e) {
			t.Errorf("stderr %q: want nothing but the errors of a loaded machine's rows", line)
		}
	}
	good, errRows := 0, 0
	for _, r := range rows {
		loadErr := isLoadErr(r.Error)
		wantMem, wantTemp := recorder.None(), recorder.None()
		switch {
		case loadErr:
			errRows++
		case r.Component == "app":
			wantMem = recorder.Some(1 << 27)
		case r.Component == "proxy":
			wantTemp = recorder.Some(3 << 20)
		}
		if r.Error == "" {
			good++
		}
		if r.RunID != "t1" || (r.Error != "" && !loadErr) || r.MemoryBytes != wantMem || r.TempLogicalBytes != wantTemp || r.CPUSeconds.Valid {
			t.Errorf("row %+v", r)
		}
	}
	if good == 0 {
		t.Errorf("no row was measured")
	}
	for _, want := range []string{"wrote " + strconv.Itoa(len(rows)) + " rows (" + strconv.Itoa(errRows) + " with errors)", "sampling jitter: p50 "} {
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
// app's memory for the first two steps only, and checks that every query
// selects the run. (TestRecordPrometheusSelectsRun and recorder's tests run
// the real Prometheus.)
func TestRecordPrometheus(t *testing.T) {
	slowlabtest.Timing(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path != "/api/v1/query_range" {
			http.NotFound(w, r)
			return
		}
		result := "[]"
		if q := r.Form.Get("query"); strings.Count(q, `{group=~"app|proxy|loadgen",run_id="p1"`) != strings.Count(q, "{") {
			t.Errorf("query does not select run p1 in every selector: %s", q)
		}
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

// exporterStandIn serves slowlab_cgroup_cpu_usage_seconds_total and
// slowlab_cgroup_memory_usage_bytes for the three components, in the
// exporter's text format: cpu[i] CPU seconds and mem[i] bytes for
// recorder.Components[i].
func exporterStandIn(t *testing.T, cpu, mem [3]float64) *httptest.Server {
	t.Helper()
	var page strings.Builder
	page.WriteString("# TYPE slowlab_cgroup_cpu_usage_seconds_total counter\n")
	for i, c := range recorder.Components {
		fmt.Fprintf(&page, "slowlab_cgroup_cpu_usage_seconds_total{group=%q} %g\n", c, cpu[i])
	}
	page.WriteString("# TYPE slowlab_cgroup_memory_usage_bytes gauge\n")
	for i, c := range recorder.Components {
		fmt.Fprintf(&page, "slowlab_cgroup_memory_usage_bytes{group=%q} %g\n", c, mem[i])
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, page.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startRecordPrometheus runs prometheus on a free loopback port with cfg
// as its configuration and returns its URL once ready; it is stopped, by
// PID, when the test ends.
func startRecordPrometheus(t *testing.T, cfg string) string {
	t.Helper()
	bin := requireTool(t, "prometheus")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second): // a clean shutdown only saves time; killing loses nothing
			cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	waitReady(t, "http://"+addr+"/-/ready", logPath)
	return "http://" + addr
}

// recordWaitFor polls check every 100 ms until it is done, failing the
// test with its last state only when the test binary's deadline is near:
// the wait is for an event, not for a guessed time.
func recordWaitFor(t *testing.T, what string, check func() (done bool, state string)) {
	t.Helper()
	giveUp := time.Now().Add(time.Hour)
	if d, ok := t.Deadline(); ok {
		giveUp = d.Add(-min(15*time.Second, time.Until(d)/10))
	}
	for {
		done, state := check()
		if done {
			return
		}
		if time.Now().After(giveUp) {
			t.Fatalf("gave up waiting for %s (test deadline near): %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRecordPrometheusSelectsRun has one real Prometheus scrape two
// exporter stand-ins with the same group names and different values,
// found through a file_sd targets file that labels them run_id=A and
// run_id=B like the lab's: record returns each run's own values, never
// their sum.
func TestRecordPrometheusSelectsRun(t *testing.T) {
	slowlabtest.Timing(t)
	a := exporterStandIn(t, [3]float64{1.5, 2.5, 3.5}, [3]float64{1 << 20, 2 << 20, 3 << 20})
	b := exporterStandIn(t, [3]float64{100, 200, 300}, [3]float64{10 << 20, 20 << 20, 30 << 20})
	addrA, addrB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.json")
	if err := os.WriteFile(targets, []byte(fmt.Sprintf(`[
  {"targets": [%q], "labels": {"job": "slowlab-exporter", "run_id": "A"}},
  {"targets": [%q], "labels": {"job": "slowlab-exporter", "run_id": "B"}}
]
`, addrA, addrB)), 0o644); err != nil {
		t.Fatal(err)
	}
	promURL := startRecordPrometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: slowlab-lab # each target's job label comes from the file
    file_sd_configs: [{files: [%q]}]
`, targets))

	// Wait until both runs' series are in Prometheus at end, which is then
	// the end of the range: the last step sees a sample of each.
	client, err := api.NewClient(api.Config{Address: promURL})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(client)
	var end time.Time
	recordWaitFor(t, "both runs' series in Prometheus", func() (bool, string) {
		end = time.Now()
		v, _, _, err := prom.Query(t.Context(), `count by (run_id) (last_over_time(slowlab_cgroup_memory_usage_bytes{group="app"}[1m]))`, end)
		vec, _ := v.(model.Vector)
		return err == nil && len(vec) == 2, fmt.Sprintf("%v, %v", v, err)
	})
	start := end.Add(-time.Minute)

	for _, tc := range []struct {
		name       string
		args       []string
		runID      string
		cpu        [3]float64
		memMiB     float64
		selectorIs string
	}{
		{"run-id A", []string{"--run-id", "A"}, "A", [3]float64{1.5, 2.5, 3.5}, 1, `{run_id="A"}`},
		{"selector run_id B", []string{"--selector", `{run_id="B"}`}, "B", [3]float64{100, 200, 300}, 10, `{run_id="B"}`},
		{"selector instance B, run-id labels", []string{"--selector", fmt.Sprintf(`{job="slowlab-exporter",instance=%q}`, addrB), "--run-id", "b-again"},
			"b-again", [3]float64{100, 200, 300}, 10, fmt.Sprintf(`{job="slowlab-exporter",instance=%q}`, addrB)},
		{"run-id of no run", []string{"--run-id", "C"}, "C", [3]float64{}, 0, `{run_id="C"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"record", "--prometheus", promURL, "--start", start.Format(time.RFC3339Nano),
				"--end", end.Format(time.RFC3339Nano), "--step", "1m", "--out", out}, tc.args...)
			code, stdout, stderr := runCmd(t, args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if want := "of " + tc.selectorIs + " from " + promURL; !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
			if hint := "no step has samples of " + tc.selectorIs; strings.Contains(stdout, hint) != (tc.memMiB == 0) {
				t.Errorf("stdout, for %s:\n%s", tc.selectorIs, stdout)
			}
			rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(out, "resource-samples.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2*3 {
				t.Fatalf("got %d rows, want 2 steps x 3 components", len(rows))
			}
			for i, r := range rows {
				step, c := i/3, i%3
				want := recorder.ResourceSample{RunID: tc.runID, TS: float64(step) * 60, Component: recorder.Components[c],
					CPUSeconds: recorder.Some(tc.cpu[c]), MemoryBytes: recorder.Some(tc.memMiB * float64(c+1) * (1 << 20))}
				if tc.memMiB == 0 || step == 0 && r.Error == recorder.ErrNoPromSamples.Error() {
					// Prometheus may have started less than a minute
					// before the first step; run C has no series.
					want = recorder.ResourceSample{RunID: tc.runID, TS: want.TS, Component: want.Component, Error: recorder.ErrNoPromSamples.Error()}
				}
				if r != want {
					t.Errorf("row %d:\ngot  %+v\nwant %+v", i, r, want)
				}
			}
		})
	}
}

// TestRecordScrapeOtherGroupNames: an exporter whose groups are not named
// app, proxy or loadgen (an SRE's "web") gives rows with no values and no
// error; record says so on stderr, naming the components it records,
// instead of leaving a file of empty rows unexplained.
func TestRecordScrapeOtherGroupNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	mem := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slowlab_cgroup_memory_usage_bytes", Help: "h"}, []string{"group"})
	reg.MustRegister(mem)
	mem.WithLabelValues("web").Set(1 << 27)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer srv.Close()

	dir := t.TempDir()
	// A generous --timeout: a scrape timed out on a loaded machine is an
	// error row, and a recording of error rows alone has its errors said.
	code, _, stderr := runCmd(t, "record", "--scrape", srv.URL+"/metrics", "--interval", "100ms", "--timeout", "5s", "--duration", "350ms", "--out", dir, "--run-id", "t1")
	want := `slowlab record: no sample had a series of group "app", "proxy" or "loadgen"`
	if code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 0 and %q", code, stderr, want)
	}
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(dir, "resource-samples.csv"))
	if err != nil || len(rows) == 0 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if r.MemoryBytes.Valid {
			t.Errorf("row %+v: a value of group web", r)
		}
	}
}

// TestRecordPrometheusNoSamplesNamesGroups: a Prometheus with nothing for
// the run (a selector that matches nothing, or an exporter whose groups
// have other names than the components') gives rows without samples, and
// the hint names both causes.
func TestRecordPrometheusNoSamplesNamesGroups(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer api.Close()
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	code, stdout, stderr := runCmd(t, "record", "--prometheus", api.URL, "--run-id", "p1",
		"--start", start.Format(time.RFC3339), "--end", start.Add(time.Second).Format(time.RFC3339), "--step", "500ms", "--out", t.TempDir())
	for _, want := range []string{`no step has samples of {run_id="p1"}: check the selector`, `group "app", "proxy" or "loadgen"`} {
		if code != 0 || stderr != "" || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant %q", code, stderr, stdout, want)
		}
	}
}
