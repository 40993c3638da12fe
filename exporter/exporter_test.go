package exporter

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/procfs"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func fixtureExporter(t *testing.T, opts Options, logger *slog.Logger) *Exporter {
	t.Helper()
	e, err := New(fixtureConfig(t), opts, logger)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestLint(t *testing.T) {
	e := fixtureExporter(t, fixtureOptions(t, "cgroup-v2"), nil)
	problems, err := testutil.CollectAndLint(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// faultyWalker wraps the fixture fd walker with injected failures.
func faultyWalker(procFS string, listErr map[string]error, statErr map[string]error) *fdWalker {
	w := newFDWalker(procFS)
	list, stat := listDirNames, w.stat
	w.listDir = func(dir string) ([]string, error) {
		if err, ok := listErr[filepath.Base(filepath.Dir(dir))]; ok {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return list(dir)
	}
	w.stat = func(name string) (os.FileInfo, error) {
		rel := filepath.Base(filepath.Dir(filepath.Dir(name))) + "/" + filepath.Base(name)
		if err, ok := statErr[rel]; ok {
			return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
		}
		return stat(name)
	}
	return &w
}

// TestPermissionDenied: an unreadable /proc/PID/fd (another user's process
// without CAP_SYS_PTRACE) fails the fd collectors, leaves the fd-derived
// series of its group out (not 0 or a part), logs one line however many
// scrapes fail, and the rest of the scrape is served.
func TestPermissionDenied(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := fixtureOptions(t, "cgroup-v1")
	opts.fds = faultyWalker(opts.ProcFS, map[string]error{"101": syscall.EACCES}, nil)
	e := fixtureExporter(t, opts, logger)
	var v map[string]float64
	for range 3 {
		v = values(t, e)
	}
	for collector, want := range map[string]float64{"cgroup": 1, "process": 1, "tempfiles": 0, "sockets": 0} {
		if got := v["slowlab_exporter_collector_success{"+collector+"}"]; got != want {
			t.Errorf("success{%s} = %v, want %v", collector, got, want)
		}
	}
	// The proxy group's fds were not all read (101's): its fd-derived
	// series are absent, not a count of what 102 holds; the app's are there.
	for _, name := range []string{"slowlab_proxy_temp_files{proxy}", "slowlab_proxy_temp_logical_bytes{proxy}", "slowlab_process_open_fds{proxy}"} {
		if got, ok := v[name]; ok {
			t.Errorf("%s = %v, want absent (pid 101's fds unreadable)", name, got)
		}
	}
	if _, ok := v["slowlab_process_open_fds{app}"]; !ok {
		t.Errorf("slowlab_process_open_fds{app} absent: the app's fds were read")
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one log line per failing collector over 3 scrapes, got:\n%s", logs.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, "permission denied") || !strings.Contains(l, "CAP_SYS_PTRACE") || !strings.Contains(l, "level=WARN") {
			t.Errorf("log line lacks the cause or the hint: %s", l)
		}
	}
}

// TestRaces: an fd that disappears between readlink and stat, and a
// process whose fd directory vanished (it exited mid-scan), are skipped
// without failing the collector.
func TestRaces(t *testing.T) {
	opts := fixtureOptions(t, "cgroup-v2")
	opts.fds = faultyWalker(opts.ProcFS,
		map[string]error{"102": syscall.ENOENT},
		map[string]error{"101/7": syscall.ENOENT, "101/14": syscall.ESRCH})
	v := values(t, fixtureExporter(t, opts, nil))
	for _, c := range []string{"tempfiles", "sockets"} {
		if got := v["slowlab_exporter_collector_success{"+c+"}"]; got != 1 {
			t.Errorf("success{%s} = %v, want 1", c, got)
		}
	}
	// Only 101/fd/5 is left: 0000000001, 8192 bytes.
	if got := v["slowlab_proxy_temp_logical_bytes{proxy}"]; got != 8192 {
		t.Errorf("logical bytes %v, want 8192", got)
	}
}

// TestProcessExitsMidScan: PIDs that no longer exist are skipped.
func TestProcessExitsMidScan(t *testing.T) {
	slowlabtest.Timing(t)
	c := &processCollector{procFS: "testdata/fixtures/proc", wchanTop: 10}
	var err error
	if c.fs, err = procfs.NewFS(c.procFS); err != nil {
		t.Fatal(err)
	}
	a := &adapter{c: c, targets: []Target{{Group: "g", PIDs: []int{101, 999, 102}}}}
	got := samples(t, a)
	if a.err != nil {
		t.Errorf("Update: %v", a.err)
	}
	for _, want := range []string{`slowlab_processes{group="g",state="sleeping"} 1`, `slowlab_processes{group="g",state="running"} 1`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
}

// TestResolveErrors: an unreadable cgroup tree fails the collectors that
// need the group's processes, with the cause.
func TestResolveErrors(t *testing.T) {
	cfg := Config{Groups: []Group{{Name: "app", Selectors: []string{"cgroup:slowlab/missing"}}}}
	e, err := New(cfg, fixtureOptions(t, "cgroup-v2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	v := values(t, e)
	for _, c := range []string{"cgroup", "process", "tempfiles", "sockets"} {
		if got := v["slowlab_exporter_collector_success{"+c+"}"]; got != 0 {
			t.Errorf("success{%s} = %v, want 0", c, got)
		}
	}
	if _, ok := v["slowlab_processes{app,sleeping}"]; !ok {
		t.Error("process metrics missing: a failing selector must still yield a partial scrape")
	}
}

// blockingCollector waits for the scrape deadline. It reports the deadline
// and when it saw it, an upper bound of when the deadline was set.
type blockingCollector struct{ deadline chan [2]time.Time }

func (c blockingCollector) Update(ctx context.Context, _ []Target, _ chan<- prometheus.Metric) error {
	d, _ := ctx.Deadline()
	c.deadline <- [2]time.Time{d, time.Now()}
	<-ctx.Done()
	return ctx.Err()
}

// TestScrapeTimeoutHeader: the scraper's timeout header bounds the scrape
// (at 90% of it), and a collector that overruns it leaves the rest served.
// The exporter's own bound is an hour, so only the header can end the
// scrape; the client's timeout merely keeps a broken exporter from hanging
// the test.
func TestScrapeTimeoutHeader(t *testing.T) {
	slowlabtest.Timing(t)
	opts := fixtureOptions(t, "cgroup-v2")
	opts.ScrapeTimeout = time.Hour
	e := fixtureExporter(t, opts, nil)
	blocking := blockingCollector{deadline: make(chan [2]time.Time, 1)}
	e.names = append(e.names, "blocking")
	e.collectors["blocking"] = blocking
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.3")
	before := time.Now()
	resp, err := (&http.Client{Timeout: slowlabtest.HangGuard}).Do(req)
	if err != nil {
		t.Fatalf("scrape with a 0.3 s timeout header: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The deadline was set 270 ms after a moment between sending the
	// request and the collector's start.
	const want = 270 * time.Millisecond
	if got := <-blocking.deadline; got[0].Before(before.Add(want)) || got[0].After(got[1].Add(want)) {
		t.Errorf("scrape deadline %v after the request was sent and %v after the collector started; want %v after the request arrived",
			got[0].Sub(before), got[0].Sub(got[1]), want)
	}
	for _, want := range []string{
		`slowlab_exporter_collector_success{collector="blocking"} 0`,
		`slowlab_exporter_collector_success{collector="cgroup"} 1`,
		`slowlab_cgroup_cpu_usage_seconds_total{group="app"} 12.5`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("response lacks %s", want)
		}
	}
}

func TestScrapeTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 10 * time.Second},
		{"5", 4500 * time.Millisecond},
		{"0.2", 180 * time.Millisecond},
		{"60", 10 * time.Second},
		{"-1", 10 * time.Second},
		{"soon", 10 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("X-Prometheus-Scrape-Timeout-Seconds", tt.header)
		}
		if got := scrapeTimeout(h, 10*time.Second); got != tt.want {
			t.Errorf("scrapeTimeout(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestMux(t *testing.T) {
	e := fixtureExporter(t, fixtureOptions(t, "cgroup-v2"), nil)
	h, err := e.Mux("/metrics", "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for path, want := range map[string]string{"/": `href="/metrics"`, "/metrics": "slowlab_processes"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
}

func TestTopWchans(t *testing.T) {
	m := map[string]int{"a": 5, "b": 4, "c": 4, "d": 1, "other": 2}
	got := topWchans(m, 2)
	want := []wchanCount{{"a", 5}, {"b", 4}, {"other", 7}}
	if len(got) != len(want) {
		t.Fatalf("topWchans = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("topWchans = %v, want %v", got, want)
		}
	}
	if got := topWchans(map[string]int{"x": 1}, 0); len(got) != 1 || got[0] != (wchanCount{"other", 1}) {
		t.Errorf("top 0 = %v, want only other", got)
	}
	// "other" is there even when nothing is folded into it, so a group has
	// a wchan series before any of its processes sleeps.
	if got := topWchans(map[string]int{}, 10); len(got) != 1 || got[0] != (wchanCount{"other", 0}) {
		t.Errorf("no sleepers = %v, want other at 0", got)
	}
	if got := topWchans(map[string]int{"x": 1, "other": 2}, 10); len(got) != 2 || got[0] != (wchanCount{"x", 1}) || got[1] != (wchanCount{"other", 2}) {
		t.Errorf("fewer than top = %v, want x then other (with the kernel's own \"other\")", got)
	}
}

// TestBoundedSeriesFromFirstScrape: every labelled series whose label
// values are a known set (each state, the "other" wait channel, each
// enabled collector) is there from the first scrape for every group, even
// one with no processes, so rate() and alerts see 0 rather than nothing.
func TestBoundedSeriesFromFirstScrape(t *testing.T) {
	e := fixtureExporter(t, fixtureOptions(t, "cgroup-v2"), nil)
	v := values(t, e)
	var missing []string
	want := func(key string) {
		if _, ok := v[key]; !ok {
			missing = append(missing, key)
		}
	}
	for _, c := range e.EnabledCollectors() {
		want("slowlab_exporter_collector_success{" + c + "}")
		want("slowlab_exporter_collector_duration_seconds{" + c + "}")
	}
	for _, g := range fixtureConfig(t).Groups {
		// The label values before state or wchan: the group, and a
		// dynamic group's capture (role sorts between group and state).
		id := g.Name
		if g.GroupName != "" {
			id = "role-app,app"
		}
		for _, s := range processStates {
			want("slowlab_processes{" + id + "," + s.name + "}")
		}
		for _, s := range tcpStates[1:] {
			want("slowlab_sockets{" + id + "," + s + "}")
		}
		want("slowlab_process_wchan{" + id + ",other}")
		for _, m := range []string{"slowlab_process_resident_memory_bytes", "slowlab_process_cpu_seconds_total",
			"slowlab_proxy_temp_files", "slowlab_proxy_temp_logical_bytes", "slowlab_proxy_temp_allocated_bytes",
			"slowlab_proxy_request_body_temp_files", "slowlab_proxy_request_body_temp_logical_bytes", "slowlab_proxy_request_body_temp_allocated_bytes"} {
			want(m + "{" + id + "}")
		}
		for _, m := range []string{"slowlab_socket_send_queue_bytes", "slowlab_socket_receive_queue_bytes", "slowlab_socket_notsent_bytes"} {
			for _, side := range sides {
				want(m + "{" + id + "," + side + "}")
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("missing from the first scrape: %v", missing)
	}
	if got := v["slowlab_process_wchan{gone,other}"]; got != 0 {
		t.Errorf(`wchan{gone,other} = %v, want 0 (the group has no processes)`, got)
	}
}

func TestParseFDTarget(t *testing.T) {
	tests := []struct {
		link string
		want fdTarget
	}{
		{"/tmp/slowlab-proxy/proxy-temp-1 (deleted)", fdTarget{path: "/tmp/slowlab-proxy/proxy-temp-1", deleted: true}},
		{"/var/lib/nginx/proxy/1/00/0000000001", fdTarget{path: "/var/lib/nginx/proxy/1/00/0000000001"}},
		{"socket:[4000000001]", fdTarget{socket: 4000000001}},
		{"socket:[]", fdTarget{}},
		{"socket:[12", fdTarget{}},
		{"pipe:[777]", fdTarget{}},
		{"anon_inode:[eventpoll]", fdTarget{}},
		{" (deleted)", fdTarget{}},
		{"", fdTarget{}},
	}
	for _, tt := range tests {
		if got := parseFDTarget("/proc/1/fd/3", tt.link); got != tt.want {
			t.Errorf("parseFDTarget(%q) = %+v, want %+v", tt.link, got, tt.want)
		}
	}
	got := parseFDTarget("/fixtures/proc/101/fd/5", "../../../tmp/x")
	if got.path != "/fixtures/tmp/x" {
		t.Errorf("relative link resolved to %q, want /fixtures/tmp/x", got.path)
	}
	if !under("/a/b/c", []string{"/x", "/a/b"}) || under("/a/bc", []string{"/a/b"}) || under("/a/b", []string{"/a/b"}) {
		t.Error("under() is wrong about directory boundaries")
	}
}

func TestParseStack(t *testing.T) {
	frames, err := parseStack(strings.NewReader("[<0>] wait_woken+0x89/0x90\n[<0>] sk_stream_wait_memory+0x268/0x3b0\n"))
	if err != nil || len(frames) != 2 || frames[1] != "sk_stream_wait_memory" {
		t.Errorf("parseStack = %v, %v", frames, err)
	}
	if _, err := parseStack(strings.NewReader("garbage\n")); err == nil {
		t.Error("parseStack(garbage): no error")
	}
}
