package stack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// nameApache is Gunicorn behind Apache httpd, as --stack names it.
const nameApache = "gunicorn+apache"

func TestApacheConfigGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		cfg    apacheConfig
	}{
		{"default", apacheConfig{RunID: "apache-default.sync-2.slow2.rep1", ServerRoot: "/run/slowlab/work/apache", Modules: "/modules",
			Listen: "127.0.0.1:40001", Upstream: "127.0.0.1:40000", Timeout: 60, ProxyTimeout: 60}},
		{"iobuffer", apacheConfig{RunID: "apache-iobuffer.sync-2.slow2.rep1", ServerRoot: "/run/slowlab/work/apache", Modules: "/modules",
			Listen: "127.0.0.1:40003", Upstream: "127.0.0.1:40002", User: "nobody", Group: "nogroup", IOBuffer: apacheIOBuffer,
			Timeout: 5, ProxyTimeout: 60}},
	} {
		got, err := tc.cfg.render()
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", "apache", tc.golden+".golden"), got)
	}
}

// A route Apache cannot express is refused by name before anything
// starts, and Apache's routes on any other proxy; the real stack stays
// NGINX's.
func TestApacheRoutesRefused(t *testing.T) {
	ap, _, err := compose(nameApache, []string{"gunicorn"}, "apache")
	if err != nil {
		t.Fatal(err)
	}
	nginx, _, _ := compose("gunicorn+nginx", []string{"gunicorn"}, "nginx")
	hap, _, _ := compose(nameHAProxy, []string{"gunicorn"}, "haproxy")
	const its = "(its routes: direct, apache-default, apache-iobuffer)"
	for _, tc := range []struct {
		st    Stack
		route Route
		want  string
	}{
		{ap, RouteBufferingOn, "route proxy-buffering-on: apache cannot run it " + its},
		{ap, RouteRequestBufferingOn, "route proxy-request-buffering-on: apache cannot run it " + its},
		{ap, RouteHAProxyDefault, "route haproxy-default: apache cannot run it " + its},
		{nginx, RouteApacheIOBuffer, "route apache-iobuffer: only the apache proxy runs it (the gunicorn+nginx stack's proxy is nginx)"},
		{hap, RouteApacheDefault, "route apache-default: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)"},
		{ap, RouteDirect, ""},
		{ap, RouteApacheDefault, ""},
		{ap, RouteApacheIOBuffer, ""},
	} {
		checkRouteRefused(t, tc.st, tc.route, tc.want)
	}
	if realProxy() != "nginx" {
		t.Errorf("the real stack's proxy is %q, want nginx", realProxy())
	}
	for _, r := range []Route{RouteApacheDefault, RouteApacheIOBuffer} {
		if !r.Valid() || !r.Known() || !r.Proxied() || r.Buffering() != (r == RouteApacheIOBuffer) || r.RequestBuffering() {
			t.Errorf("%s: valid %t, known %t, proxied %t, buffering %t, request buffering %t", r, r.Valid(), r.Known(), r.Proxied(), r.Buffering(), r.RequestBuffering())
		}
	}
	if err := (apacheProxy{}).Validate(Settings{NginxSnippet: "gzip on;"}); err == nil {
		t.Error("apache took an nginx snippet")
	}
}

// TestGunicornApacheRoutes serves every endpoint through Apache's routes,
// under the proxy's published limits, and checks what the lab reads of
// it: its version, its log, its cgroup.
func TestGunicornApacheRoutes(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "apache2")
	for _, route := range []Route{RouteApacheDefault, RouteApacheIOBuffer} {
		t.Run(string(route), func(t *testing.T) {
			g := lookup(t, nameApache, "sync-2")
			s := startReal(t, g, route, "sync-2", 300_000)
			s.checkWorkers(t)
			testRealServes(t, s, g)
			conf, err := os.ReadFile(filepath.Join(s.d.WorkDir, "apache", "httpd.conf"))
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(conf, []byte("\nProxyIOBufferSize 16777216\n")); got != (route == RouteApacheIOBuffer) {
				t.Errorf("httpd.conf on %s has ProxyIOBufferSize 16777216: %t:\n%s", route, got, conf)
			}
			// The parent and its one worker process.
			checkChildProxy(t, s, g, "apache", "Server version: Apache/2.4.", 2)
			s.stopAndCheck(t)
		})
	}
}

// TestApacheSlowReaders is the finding, asserted by its mechanism: two
// slow readers of 16 MiB against sync-2. Behind apache-default mod_proxy
// writes each 8 KiB read to the client before it reads more, so the
// readers hold both workers (two connections to the app while they
// read), /fast waits, and the app's send takes most of the download.
// Behind apache-iobuffer (ProxyIOBufferSize 16777216) the readers' bytes
// go as far, complete; how much sooner the app is let go varies from run
// to run (app_send_s 0.1-3.4 s of 8 s measured, 4.4-5.2 s on
// apache-default), so no protection is asserted there, only logged.
func TestApacheSlowReaders(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "apache2")
	for _, route := range []Route{RouteApacheDefault, RouteApacheIOBuffer} {
		t.Run(string(route), func(t *testing.T) {
			starved := route == RouteApacheDefault
			s := startReal(t, lookup(t, nameApache, "sync-2"), route, "sync-2", 16<<20)
			u, _ := url.Parse(s.run.URL() + "/large")
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			connected := make(chan struct{}, 2)
			downloads := make([]loadgen.Download, 2)
			for i := range 2 {
				sr := loadgen.SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 2 << 20, Timeout: 2 * time.Minute,
					Header:    http.Header{appserver.RequestIDHeader: {"slow-" + strconv.Itoa(i)}},
					OnConnect: func(int, netip.AddrPort) { connected <- struct{}{} }}
				wg.Go(func() { downloads[i] = sr.Run(ctx, i) })
			}
			<-connected
			<-connected
			_, port, _ := net.SplitHostPort(s.run.AppAddr())
			if starved {
				slowlabtest.WaitFor(t, "both app workers held by the two slow readers", func() bool { return slowlabtest.EstablishedTo(t, port) == 2 },
					func() string { return fmt.Sprintf("%d connections to the app", slowlabtest.EstablishedTo(t, port)) })
				if d, err := fastWithin(s.run.URL(), 2*time.Second); err == nil {
					t.Errorf("/fast answered in %v while two slow readers read through %s: want it starved", d, route)
				}
			}
			wg.Wait()
			sends, err := s.run.AppSend(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range downloads {
				send, recv := sends["slow-"+strconv.Itoa(i)], d.Receive.Seconds()
				if !d.Complete || d.Bytes != 16<<20 {
					t.Errorf("download %d: complete %t, %d bytes (%v)", i, d.Complete, d.Bytes, d.Err)
				}
				t.Logf("download %d on %s: app_send_s %.2f, client_receive_s %.2f", i, route, send, recv)
				// Paced: the app sent for at least 45% of the download
				// (measured 55-65%).
				if starved && send < 0.45*recv {
					t.Errorf("download %d on %s: the app sent for %.2f s of the client's %.2f s: want it paced by the client", i, route, send, recv)
				}
				if send <= 0 || send >= recv {
					t.Errorf("download %d on %s: the app sent for %.2f s of the client's %.2f s", i, route, send, recv)
				}
			}
			slowlabtest.WaitFor(t, "/fast answered once the slow readers are done", func() bool { _, err := fastWithin(s.run.URL(), 3*time.Second); return err == nil })
			s.stopAndCheck(t)
		})
	}
}

// checkChildProxy checks what the lab reads of a proxy that runs as a
// child process (HAProxy, Apache): its version (versions[name] starts
// with version), its one log (RUNID-name.log), and, under the published
// limits, its cgroup's (0.2 CPU, 96 MiB, its procs processes, the one
// the lab started among them).
func checkChildProxy(t *testing.T, s *realStack, g Stack, name, version string, procs int) {
	t.Helper()
	if v := g.Versions()[name]; !strings.HasPrefix(v, version) {
		t.Errorf("versions: %s %q, want %q...", name, v, version)
	}
	if logs := s.run.ProxyErrorLogs(); len(logs) != 1 || filepath.Base(logs[0]) != s.d.RunID+"-"+name+".log" {
		t.Errorf("proxy error logs %v", logs)
	}
	if !s.limited {
		return
	}
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := layout.Limits(s.run.Cgroup("proxy").Path()); err != nil || l.CPUCores != 0.2 || l.MemoryBytes != 96<<20 {
		t.Errorf("proxy cgroup limits %s (%v), want 0.2 CPU and 96 MiB", l, err)
	}
	if pids, err := s.run.Cgroup("proxy").Pids(); err != nil || len(pids) != procs || !slices.Contains(pids, s.run.PIDs()["proxy"]) {
		t.Errorf("proxy cgroup holds %v (%v), want %s's %d processes, %d among them", pids, err, name, procs, s.run.PIDs()["proxy"])
	}
}

// checkRouteRefused checks that st refuses route with the error want ("":
// runs it): CheckRoute, and Start before it starts the app (the work dir
// stays empty and no cgroup is made).
func checkRouteRefused(t *testing.T, st Stack, route Route, want string) {
	t.Helper()
	err := st.CheckRoute(route)
	if fmt.Sprint(err) != want && !(err == nil && want == "") {
		t.Errorf("%s on %s: %v, want %q", route, st.Name, err, want)
	}
	if want == "" {
		return
	}
	d := Deployment{RunID: "test-refused-" + strconv.Itoa(os.Getpid()), Route: route, Server: Server{Model: "sync", Workers: 1, Threads: 1},
		LargeSize: 1 << 10, LogDir: t.TempDir(), WorkDir: t.TempDir()}
	if r, err := st.Start(context.Background(), d); err == nil || err.Error() != want {
		if err == nil {
			r.Stop()
		}
		t.Errorf("Start %s on %s: %v, want %q", route, st.Name, err, want)
	}
	if left, _ := os.ReadDir(d.WorkDir); len(left) > 0 {
		t.Errorf("Start %s on %s left %v in its work dir", route, st.Name, left)
	}
}
