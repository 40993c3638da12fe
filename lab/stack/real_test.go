package stack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestNginxConfigGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		cfg    nginxConfig
	}{
		{"buffering-off", nginxConfig{RunID: "proxy-buffering-off.sync-2.slow2.rep1", Dir: "/tmp/slowlab-run-1/nginx",
			TempDir: "/tmp/slowlab-run-1/proxy_temp", Listen: "127.0.0.1:40001", Upstream: "127.0.0.1:40000",
			RequestBuffering: true, ClientBodyBuffer: "16k", ClientHeaderTimeout: "60s", SendTimeout: "60s", ReadTimeout: "60s", MaxTempFileSize: "32m", HTTPVersion: "1.1"}},
		{"request-buffering-off", nginxConfig{RunID: "proxy-request-buffering-off.sync-2.up2.rep1", Dir: "/tmp/slowlab-run-3/nginx",
			TempDir: "/tmp/slowlab-run-3/proxy_temp", Listen: "127.0.0.1:40005", Upstream: "127.0.0.1:40004", Buffering: true,
			ClientBodyBuffer: "1048576", ClientHeaderTimeout: "10s", SendTimeout: "5s", ReadTimeout: "3s", MaxTempFileSize: "0", HTTPVersion: "1.1"}},
		{"buffering-on-root-snippet", nginxConfig{RunID: "proxy-buffering-on.sync-2.slow2.rep1", Dir: "/tmp/slowlab-run-2/nginx",
			TempDir: "/tmp/slowlab-run-2/proxy_temp", Listen: "127.0.0.1:40003", Upstream: "127.0.0.1:40002", Buffering: true,
			RequestBuffering: true, ClientBodyBuffer: "16k", ClientHeaderTimeout: "60s", SendTimeout: "60s", ReadTimeout: "60s", MaxTempFileSize: "32m",
			HTTPVersion: "1.1", User: "root", Group: "root", Snippet: "add_header X-Slowlab-Snippet on;\n\n  proxy_read_timeout 90s;"}},
		{"buffering-on-http10", nginxConfig{RunID: "proxy-buffering-on-http10.sync-2.s2.rep1", Dir: "/tmp/slowlab-run-4/nginx",
			TempDir: "/tmp/slowlab-run-4/proxy_temp", Listen: "127.0.0.1:40007", Upstream: "127.0.0.1:40006", Buffering: true,
			RequestBuffering: true, ClientBodyBuffer: "16k", ClientHeaderTimeout: "60s", SendTimeout: "60s", ReadTimeout: "60s", MaxTempFileSize: "32m",
			HTTPVersion: "1.0"}},
	} {
		got, err := tc.cfg.render()
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", "nginx", tc.golden+".golden"), got)
	}
}

// checkGolden compares a generated config with its golden file, which
// -update rewrites.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated config (run with -update if the change is intended):\n%s", path, got)
	}
}

func TestStackCheck(t *testing.T) {
	real, _, err := compose(NameReal, []string{"gunicorn"}, "nginx")
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*Stack)) Stack { s := real; f(&s); return s }
	for _, tc := range []struct {
		s    Stack
		want string
	}{
		{with(func(s *Stack) { s.Limits = map[string]cgroup.Limits{"db": {}} }), `limits for "db": components are app, proxy and loadgen`},
		{with(func(s *Stack) { s.Limits = map[string]cgroup.Limits{"zz": {}, "db": {}, "queue": {}} }), `limits for "db": components are app, proxy and loadgen`},
		{with(func(s *Stack) { s.Limits = map[string]cgroup.Limits{"app": {CPUCores: -1}} }), "limits for app: CPU limit -1 cores: must be 0 (unlimited) or a positive number"},
		{with(func(s *Stack) { s.CgroupRoot = "sys/fs/cgroup" }), `cgroup root "sys/fs/cgroup": must be an absolute path`},
		{with(func(s *Stack) { s.Settings.GunicornArgs = []string{"--bind=0.0.0.0:80"} }), `extra gunicorn argument "--bind=0.0.0.0:80": --bind is set by the lab`},
		{with(func(s *Stack) { s.Settings.GunicornArgs = []string{"-w4"} }), `extra gunicorn argument "-w4": -w is set by the lab`},
		{with(func(s *Stack) { s.Settings.GunicornArgs = []string{""} }), `extra gunicorn argument "": must be non-empty text`},
		{with(func(s *Stack) { s.Settings.NginxSnippet = "add_header X y" }), `nginx snippet "add_header X y": must end with ; or }`},
		{with(func(s *Stack) { s.Settings.NginxSnippet = "if ($x) { return 404; " }), `nginx snippet "if ($x) { return 404; ": unbalanced {`},
		{with(func(s *Stack) { s.Settings.NginxSnippet = `add_header X "y;` }), `nginx snippet "add_header X \"y;": unterminated quote`},
		{with(func(s *Stack) { s.Settings.NginxSnippet = "add_header X y; proxy_buffering on;" }), `nginx snippet "add_header X y; proxy_buffering on;": sets proxy_buffering, which the lab sets for the route`},
	} {
		if err := tc.s.Check(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", tc.s, err, tc.want)
		}
	}
	ok := with(func(s *Stack) {
		s.Limits = publishedLimits
		s.Settings = Settings{GunicornArgs: []string{"--max-requests", "1000", "--worker-connections=10", "--keep-alive", "5"},
			NginxSnippet: "add_header X-A \"b;c\";\nlocation /x { return 204; }"}
	})
	if err := ok.Check(); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}
	if err := real.Check(Server{Model: "async", Workers: 1, Threads: 1}); err == nil || err.Error() != `server model "async": the real stack runs `+strings.Join(real.Models(), ", ") {
		t.Errorf("async on the real stack: %v", err)
	}
	// A gevent server's worker connections are its size: the lab sets them.
	gevent := Server{Model: "gevent", Workers: 2, Threads: 100}
	if err := ok.Check(Server{Model: "gthread", Workers: 1, Threads: 4}); err != nil {
		t.Errorf("--worker-connections with gthread: %v", err)
	}
	const want = `server gevent-2x100: extra gunicorn argument "--worker-connections=10": --worker-connections is set by the lab for a gevent server (its size, gevent-WxC)`
	if err := ok.Check(gevent); err == nil || err.Error() != want {
		t.Errorf("--worker-connections with gevent: %v, want %q", err, want)
	}

	d := Deployment{RunID: "r", Route: RouteDirect, Server: Server{Model: "sync", Workers: 2, Threads: 1}, WorkDir: "/w", LogDir: "/l"}
	for _, tc := range []struct {
		mod  func(*Deployment)
		want string
	}{
		{func(d *Deployment) { d.Route = "sideways" }, `route "sideways": allowed [direct proxy-buffering-off proxy-buffering-on], [proxy-request-buffering-on proxy-request-buffering-off], [h2-proxy-buffering-off h2-proxy-buffering-on h2-tls-proxy-buffering-off h2-tls-proxy-buffering-on caddy-tls] and [apache-default apache-iobuffer caddy-default caddy-buffer-response caddy-buffer-request haproxy-default haproxy-buffer-request]`},
		{func(d *Deployment) { d.Server.Workers = 0 }, "server workers 0: must be at least 1"},
		{func(d *Deployment) { d.LargeSize = -1 }, "large size -1: want 0..1073741824 bytes"},
		{func(d *Deployment) { d.RunID = "a/b" }, `run id "a/b": must be a non-empty name without /`},
		{func(d *Deployment) { d.WorkDir = "" }, "deployment needs a work dir and a log dir"},
		{func(d *Deployment) { d.AppTimeout = 1500 * time.Millisecond }, "app timeout 1.5s: want 0 (the app's default) or whole seconds from 1s to 1h0m0s"},
		{func(d *Deployment) { d.AppTimeout = 2 * time.Hour }, "app timeout 2h0m0s: want 0 (the app's default) or whole seconds from 1s to 1h0m0s"},
		{func(d *Deployment) { d.ClientBodyBuffer = 100 }, "client body buffer 100: want 0 (the proxy's default) or 1024..1073741824 bytes"},
		{func(d *Deployment) { d.ClientHeaderTimeout = -time.Second }, "client header timeout -1s: want 0 (the proxy's default) or whole seconds from 1s to 1h0m0s"},
	} {
		dd := d
		tc.mod(&dd)
		if err := validateDeployment(dd); err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func TestReadAppSendLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app-send.jsonl")
	if m, err := readAppSendLog(path); err != nil || len(m) != 0 {
		t.Fatalf("missing log: %v, %v; want empty", m, err)
	}
	os.WriteFile(path, []byte(`{"event":"start","id":"a","pid":7,"peer_port":5000}`+"\n"+`{"id":"a","bytes":10,"app_send_s":0.5,"complete":true}`+"\n"+
		`{"event":"start","id":"s","pid":7}`+"\n"+
		`{"id":"b","bytes":3,"app_send_s":1.25,"complete":false,"traceparent":"00-x"}`+"\n"+`{"id":"c","by`), 0o644)
	m, err := readAppSendLog(path)
	if err != nil || len(m) != 2 || m["a"] != 0.5 || m["b"] != 1.25 {
		t.Fatalf("got %v, %v; want a and b, the start records and the torn last line skipped", m, err)
	}
	os.WriteFile(path, []byte("garbage\n"+`{"id":"a","app_send_s":1}`+"\n"), 0o644)
	if _, err := readAppSendLog(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad line: %v", err)
	}
}

// realStack is a stack started for one route and server, stopped at
// cleanup.
type realStack struct {
	run     *Running
	d       Deployment
	limited bool
	proxy   Proxy
}

// publishedLimits are docs/experiments.md's limits by role.
var publishedLimits = map[string]cgroup.Limits{
	"app":     {CPUCores: 0.25, MemoryBytes: 128 << 20},
	"proxy":   {CPUCores: 0.20, MemoryBytes: 96 << 20},
	"loadgen": {CPUCores: 0.20, MemoryBytes: 128 << 20},
}

// lookup returns the named stack, requiring its components (CI=true fails
// without them), with the published limits in cgroups when root.
func lookup(t *testing.T, name string, servers ...string) Stack {
	t.Helper()
	// Before Lookup, which probes the machine (Python's modules, Node.js)
	// for what Require then skips under -short anyway.
	slowlabtest.EndToEnd(t, "it starts the "+name+" stack")
	var specs []Server
	for _, srv := range servers {
		spec, err := ParseServer(srv)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	st, _, err := Lookup(name, specs...)
	why := ""
	if err != nil {
		why = err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
	if os.Geteuid() == 0 {
		st.Cgroups, st.Limits = true, publishedLimits
	}
	return st
}

func startReal(t *testing.T, st Stack, route Route, server string, largeSize int64) *realStack {
	t.Helper()
	return startRealWith(t, st, route, server, largeSize, func(*Deployment) {})
}

// startRealWith is startReal with the deployment changed by set first.
func startRealWith(t *testing.T, st Stack, route Route, server string, largeSize int64, set func(*Deployment)) *realStack {
	t.Helper()
	spec, err := ParseServer(server)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	rand.Read(b)
	d := Deployment{RunID: fmt.Sprintf("test-%s.%s.%s", route, server, hex.EncodeToString(b)), Route: route, Server: spec,
		LargeSize: largeSize, LogDir: t.TempDir(), WorkDir: t.TempDir()}
	set(&d)
	r, err := st.Start(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	return &realStack{run: r, d: d, limited: st.Cgroups, proxy: st.Proxy}
}

// get fetches url with the given request headers on a new connection.
func get(t *testing.T, u string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// largeBody is what the embedded target writes for n bytes.
func largeBody(n int) []byte {
	block := make([]byte, appserver.DefaultBlockSize)
	for i := range block {
		block[i] = byte('a' + i%26)
	}
	return bytes.Repeat(block, n/len(block)+1)[:n]
}

var serverTimingRE = regexp.MustCompile(`^app;dur=\d+\.\d{3}$`)

// waitAppSend polls AppSend until it has id: the app records a response
// right after its last write, which may be after the client got the bytes.
func waitAppSend(t *testing.T, r *Running, id string) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := r.AppSend(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := m[id]; ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("AppSend has no record for %q: %v", id, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists live (non-zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command: state ppid pgrp ...
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

var _ testedApp = (*gunicornRun)(nil)

// checkWorkers asserts that Start returned with every worker booted:
// Gunicorn's process group is its master and W workers.
func (r *gunicornRun) checkWorkers(t *testing.T, d Deployment) {
	t.Helper()
	if m := groupMembers(r.p.PID()); len(m) != 1+d.Server.Workers {
		t.Errorf("gunicorn's process group has %v, want the master and %d workers", m, d.Server.Workers)
	}
}

// servingPIDs are Gunicorn's workers: its process group but the master.
func (r *gunicornRun) servingPIDs() []int {
	return slices.DeleteFunc(groupMembers(r.p.PID()), func(p int) bool { return p == r.p.PID() })
}

// stopAndCheck stops the stack and asserts that none of the processes it
// started (the app's and NGINX's) nor its cgroups remain, and that an
// installed app's held long-polls then count none (its workers exited).
func (s *realStack) stopAndCheck(t *testing.T) {
	t.Helper()
	members := map[int][]int{}
	for _, pid := range s.run.PIDs() {
		members[pid] = groupMembers(pid)
	}
	var dirs []string
	for _, cg := range s.run.cgroups {
		dirs = append(dirs, cg.Dirs()...)
	}
	s.run.Stop()
	// SIGKILLed processes take a moment to go on a loaded machine.
	gone := func() bool {
		for pgid := range members {
			if len(groupMembers(pgid)) > 0 {
				return false
			}
		}
		return len(processesMentioning(s.d.WorkDir)) == 0
	}
	for deadline := time.Now().Add(30 * time.Second); !gone() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for pgid, was := range members {
		if left := groupMembers(pgid); len(left) > 0 {
			t.Errorf("processes %v of group %d (was %v) still running after Stop", left, pgid, was)
		}
	}
	if left := processesMentioning(s.d.WorkDir); len(left) > 0 {
		t.Errorf("processes %v still running with the run's work dir", left)
	}
	for _, d := range append(dirs, filepath.Dir(firstOr(dirs))) {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left after Stop", d)
		}
	}
	if a, ok := s.run.app.(testedApp); ok {
		if held, err := a.appProc().LongPollsHeld(context.Background()); err != nil || len(held) != 0 {
			t.Errorf("LongPollsHeld after Stop = %v, %v; want none (its workers exited)", held, err)
		}
	}
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return "/nonexistent/x"
	}
	return s[0]
}

// TestGunicornNginxRoutes serves every endpoint through every route with
// each worker class, and checks what the lab reads from the stack.
func TestGunicornNginxRoutes(t *testing.T) {
	slowlabtest.Timing(t)
	for _, server := range []string{"sync-2", "gthread-1x4", "gevent-2x50"} {
		for _, route := range Routes {
			t.Run(string(route)+"/"+server, func(t *testing.T) {
				var setup func(*Stack)
				var more func(*testing.T, *realStack)
				switch {
				case route == RouteBufferingOff && server == "sync-2":
					setup = func(g *Stack) {
						g.Settings.NginxSnippet = "add_header X-Slowlab-Snippet on;"
						g.Settings.GunicornArgs = []string{"--max-requests", "1000"}
					}
				case route == RouteBufferingOn && server == "sync-2":
					more = testRealSpool
				}
				testServes(t, route, server, setup, more)
			})
		}
	}
}

// testRealSpool reads a response slowly through the buffering proxy: NGINX
// spools it to an (unlinked) temp file under TempDirs while the app is done
// sending within a fraction of the download time.
func testRealSpool(t *testing.T, s *realStack) {
	// Larger than NGINX's socket send buffer can absorb (tcp_wmem's
	// maximum is typically 4 MiB), so the rest must spill to disk.
	const size = 8 << 20
	u, _ := url.Parse(s.run.URL() + "/large?size=" + strconv.Itoa(size))
	// Read at 1 MiB/s: an 8 s download, in which an unbuffered path would
	// hold the app's send 4 s or more (what the socket buffers cannot
	// hold, at the reader's rate), and the buffering proxy's spooling
	// stays under a quarter: 0.56 s seen with three suites' load on 2
	// cores, 1.88 s beside a hog at normal priority on both (LOAD_NICE=0),
	// which a 4 s download's quarter did not hold.
	sr := loadgen.SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 1 << 20, Timeout: 30 * time.Second,
		Header: http.Header{appserver.RequestIDHeader: {"slow-0"}}}
	var wg sync.WaitGroup
	var dl loadgen.Download
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wg.Go(func() { dl = sr.Run(ctx, 0); cancel() })
	tempDir := s.run.TempDirs()[0]
	seen := ""
	for ctx.Err() == nil && seen == "" {
		seen = openTempFile(s.run.PIDs()["proxy"], tempDir)
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	if !dl.Complete || dl.Bytes != size || dl.Err != nil {
		t.Fatalf("slow download: %+v", dl)
	}
	sendS := waitAppSend(t, s.run, "slow-0")
	t.Logf("slow download %.2fs, app_send_s %.3f, temp file %q", dl.Receive.Seconds(), sendS, seen)
	if seen == "" {
		t.Errorf("no NGINX temp file open under %s during the slow download", tempDir)
	}
	if dl.Receive < time.Second || sendS > dl.Receive.Seconds()/4 {
		t.Errorf("app_send_s %.3f for a %.2fs download; want the proxy to absorb the response", sendS, dl.Receive.Seconds())
	}
}

// openTempFile returns a file under dir that process pid has open (NGINX
// unlinks its temp files right after creating them), or "".
func openTempFile(pid int, dir string) string {
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, _ := os.ReadDir(fdDir)
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasPrefix(l, dir+"/") {
			return l
		}
	}
	return ""
}

// maxThrottledAtReady is how many throttled periods a component may show
// when Start returns, its quota set only once it was ready.
const maxThrottledAtReady = 2

// TestGunicornNginxThrottled loads the app with /large responses: under its
// 0.25-core quota the app's cgroup is throttled, and uses about the quota.
func TestGunicornNginxThrottled(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "cgroup limits")
	s := startReal(t, lookup(t, NameReal), RouteDirect, "sync-2", 16<<20)
	cg := s.run.cgroups["app"]
	if pids, err := cg.Pids(); len(pids) != 3 {
		t.Errorf("app cgroup holds %v (%v), want gunicorn's master and 2 workers", pids, err)
	}
	// Gunicorn started without a quota and has it now it is ready. Booting
	// sync-2 under the 0.25-core quota throttles it for 20 to 72 periods
	// here (Gunicorn started in a cgroup with the quota already set, until
	// /fast answered); the period the quota lands in may still be
	// throttled once or twice by what the app is finishing then (a CI run
	// saw 1), which is not a boot under the quota.
	if n := cpuStat(t, cg)["nr_throttled"]; n > maxThrottledAtReady {
		t.Errorf("app cgroup throttled %d periods by the time Start returned (at most %d as the quota lands): the quota was on while it started", n, maxThrottledAtReady)
	}
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := layout.Limits(cg.Path()); err != nil || l.CPUCores != 0.25 {
		t.Errorf("app cgroup limits %s (%v) once started, want 0.25 CPU", l, err)
	}
	// Load until the kernel has throttled the app for 50 periods (half a
	// second of its quota periods), however long that takes here.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now() // before the usage read: the rate can only come out low
	s0, u0 := cpuStat(t, cg), cpuUsage(t, cg)
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.run.URL()+"/large", nil)
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	for deadline := time.Now().Add(60 * time.Second); cpuStat(t, cg)["nr_throttled"] < s0["nr_throttled"]+50 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	s1, u1 := cpuStat(t, cg), cpuUsage(t, cg)
	t1 := time.Now()
	cores := (u1 - u0).Seconds() / t1.Sub(t0).Seconds()
	t.Logf("app cgroup: nr_periods %d, nr_throttled %d -> %d, usage %.3f cores", s1["nr_periods"]-s0["nr_periods"],
		s0["nr_throttled"], s1["nr_throttled"], cores)
	if s1["nr_throttled"] <= s0["nr_throttled"] {
		t.Errorf("app cgroup not throttled under load: nr_throttled %d -> %d", s0["nr_throttled"], s1["nr_throttled"])
	}
	if cores > 0.35 {
		t.Errorf("app used %.3f cores, above its 0.25 quota", cores)
	}
	if err := s.run.Failed(); err != nil {
		t.Error(err)
	}
	s.stopAndCheck(t)
}

// TestGunicornNginxAppDies kills Gunicorn's master mid-run: Failed says so,
// and Stop still cleans up the workers and cgroups.
func TestGunicornNginxAppDies(t *testing.T) {
	slowlabtest.Timing(t)
	s := startReal(t, lookup(t, NameReal), RouteBufferingOff, "sync-2", 1<<20)
	s.checkWorkers(t)
	if err := s.run.Failed(); err != nil {
		t.Fatal(err)
	}
	pid := s.run.PIDs()["app"]
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		err = s.run.Failed()
	}
	want := fmt.Sprintf("app: gunicorn (pid %d) exited during the run: signal: killed", pid)
	if err == nil || err.Error() != want {
		t.Fatalf("Failed() = %v, want %q", err, want)
	}
	s.stopAndCheck(t)
}

// A stack that cannot start says why and leaves nothing behind.
func TestGunicornNginxStartFails(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{GunicornArgs: []string{"--no-such-flag"}}, "gunicorn exited before it was ready"},
		{Settings{NginxSnippet: "no_such_directive on;"}, `unknown directive "no_such_directive"`},
	} {
		g := lookup(t, NameReal)
		g.Settings = tc.s
		d := Deployment{RunID: "test-fail-" + strconv.Itoa(os.Getpid()), Route: RouteBufferingOn, Server: Server{Model: "sync", Workers: 1, Threads: 1},
			LargeSize: 1 << 20, LogDir: t.TempDir(), WorkDir: t.TempDir()}
		r, err := g.Start(context.Background(), d)
		if err == nil {
			r.Stop()
			t.Fatalf("%+v started", tc.s)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want it to contain %q", err, tc.want)
		}
		for _, h := range []string{"cpu", "cpuacct", "memory", ""} {
			if _, err := os.Stat(filepath.Join(cgroup.DefaultRoot, h, filepath.Dir(CgroupName(d.RunID, "app")))); err == nil {
				t.Errorf("cgroup %s left behind in %q", d.RunID, h)
			}
		}
		if left := processesMentioning(d.WorkDir); len(left) > 0 {
			t.Errorf("processes %v still running with the run's work dir", left)
		}
	}
}

// readAppSendLog is app_send_s by request id from the send log at path.
func readAppSendLog(path string) (map[string]float64, error) {
	recs, err := readSendLog(path)
	if err != nil {
		return nil, err
	}
	return appSendTimes(recs), nil
}
