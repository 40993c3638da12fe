package stack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// nameHAProxy is Gunicorn behind HAProxy, as --stack names it.
const nameHAProxy = "gunicorn+haproxy"

func TestHAProxyConfigGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		cfg    haproxyConfig
	}{
		{"default", haproxyConfig{RunID: "haproxy-default.sync-2.slow2.rep1", Listen: "127.0.0.1:40001", Upstream: "127.0.0.1:40000",
			ClientTimeout: "60s", RequestTimeout: "60s", ServerTimeout: "60s"}},
		{"buffer-request", haproxyConfig{RunID: "haproxy-buffer-request.sync-2.up2.rep1", Listen: "127.0.0.1:40003", Upstream: "127.0.0.1:40002",
			BufferRequest: true, ClientTimeout: "5s", RequestTimeout: "10s", ServerTimeout: "60s"}},
	} {
		got, err := tc.cfg.render()
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", "haproxy", tc.golden+".golden"), got)
	}
}

// A route HAProxy cannot express is refused by name before anything
// starts, and HAProxy's routes on any other proxy; the real stack stays
// NGINX's.
func TestHAProxyRoutesRefused(t *testing.T) {
	hap, _, err := compose(nameHAProxy, []string{"gunicorn"}, "haproxy")
	if err != nil {
		t.Fatal(err)
	}
	nginx, _, _ := compose("gunicorn+nginx", []string{"gunicorn"}, "nginx")
	for _, tc := range []struct {
		st    Stack
		route Route
		want  string
	}{
		{hap, RouteBufferingOn, "route proxy-buffering-on: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)"},
		{hap, RouteRequestBufferingOff, "route proxy-request-buffering-off: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)"},
		{hap, RouteH2TLSBufferingOn, "route h2-tls-proxy-buffering-on: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)"},
		{nginx, RouteHAProxyDefault, "route haproxy-default: only the haproxy proxy runs it (the gunicorn+nginx stack's proxy is nginx)"},
		{hap, RouteDirect, ""},
		{hap, RouteHAProxyDefault, ""},
		{hap, RouteHAProxyBufferRequest, ""},
		{nginx, RouteBufferingOn, ""},
	} {
		checkRouteRefused(t, tc.st, tc.route, tc.want)
	}
	if realProxy() != "nginx" {
		t.Errorf("the real stack's proxy is %q, want nginx", realProxy())
	}
	for _, r := range []Route{RouteHAProxyDefault, RouteHAProxyBufferRequest} {
		if !r.Valid() || !r.Known() || !r.Proxied() || r.Buffering() || r.RequestBuffering() != (r == RouteHAProxyBufferRequest) {
			t.Errorf("%s: valid %t, known %t, proxied %t, buffering %t, request buffering %t", r, r.Valid(), r.Known(), r.Proxied(), r.Buffering(), r.RequestBuffering())
		}
	}
	if err := (haproxyProxy{}).Validate(Settings{NginxSnippet: "gzip on;"}); err == nil {
		t.Error("haproxy took an nginx snippet")
	}
}

// TestGunicornHAProxyRoutes serves every endpoint through HAProxy's
// routes, under the proxy's published limits, and checks what the lab
// reads of it: its version, its log, its selectors.
func TestGunicornHAProxyRoutes(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "haproxy")
	for _, route := range []Route{RouteHAProxyDefault, RouteHAProxyBufferRequest} {
		t.Run(string(route), func(t *testing.T) {
			g := lookup(t, nameHAProxy, "sync-2")
			s := startReal(t, g, route, "sync-2", 300_000)
			s.checkWorkers(t)
			testRealServes(t, s, g)
			conf, err := os.ReadFile(filepath.Join(s.d.WorkDir, "haproxy", "haproxy.cfg"))
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(conf, []byte("\n    option http-buffer-request\n")); got != (route == RouteHAProxyBufferRequest) {
				t.Errorf("haproxy.cfg on %s has option http-buffer-request: %t:\n%s", route, got, conf)
			}
			checkChildProxy(t, s, g, "haproxy", "HAProxy version ", 1)
			s.stopAndCheck(t)
		})
	}
}

// TestHAProxyDefaultStarves is the finding: HAProxy relays a response
// through its 16 KiB buffer, so two slow readers of a large response hold
// both sync workers behind haproxy-default (two connections to the app
// while they read) and /fast waits; once they hang up, /fast is answered.
func TestHAProxyDefaultStarves(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "haproxy")
	s := startReal(t, lookup(t, nameHAProxy, "sync-2"), RouteHAProxyDefault, "sync-2", 16<<20)
	u, _ := url.Parse(s.run.URL() + "/large")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 2 {
		sr := loadgen.SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 64 << 10, Timeout: 2 * time.Minute,
			Header: http.Header{appserver.RequestIDHeader: {"slow-" + strconv.Itoa(i)}}}
		wg.Go(func() { sr.Run(ctx, i) })
	}
	_, port, _ := net.SplitHostPort(s.run.AppAddr())
	slowlabtest.WaitFor(t, "both app workers held by the two slow readers", func() bool { return slowlabtest.EstablishedTo(t, port) == 2 },
		func() string { return fmt.Sprintf("%d connections to the app", slowlabtest.EstablishedTo(t, port)) })
	if d, err := fastWithin(s.run.URL(), 3*time.Second); err == nil {
		t.Errorf("/fast answered in %v while two slow readers read through haproxy-default: want it starved", d)
	}
	cancel()
	wg.Wait()
	slowlabtest.WaitFor(t, "/fast answered once the slow readers hung up", func() bool { _, err := fastWithin(s.run.URL(), 3*time.Second); return err == nil })
	s.stopAndCheck(t)
}

// fastWithin GETs /fast with a timeout, returning how long it took.
func fastWithin(base string, timeout time.Duration) (time.Duration, error) {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	t0 := time.Now()
	resp, err := client.Get(base + "/fast")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("/fast: %s", resp.Status)
	}
	return time.Since(t0), nil
}

// TestHAProxySlowUploads: two slow uploads of a body HAProxy's buffer
// holds (8 KiB at 2 KiB/s) hold both sync workers behind haproxy-default,
// which passes the body on as it comes, and none behind
// haproxy-buffer-request, which waits for the body before it connects
// (/fast is answered meanwhile); a body larger than the buffer (64 KiB at
// 4 KiB/s, 16 s) reaches the app once the buffer is full, about 4 s in,
// and holds the workers again.
func TestHAProxySlowUploads(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "haproxy")
	testSlowUploads(t, nameHAProxy, []slowUploadCase{
		{RouteHAProxyDefault, 8 << 10, 2 << 10, true},
		{RouteHAProxyBufferRequest, 8 << 10, 2 << 10, false},
		{RouteHAProxyBufferRequest, 64 << 10, 4 << 10, true},
	})
}

// slowUploadCase is two slow uploads of size bytes at rate bytes/s on
// route, and whether they hold both sync workers.
type slowUploadCase struct {
	route      Route
	size, rate int64
	held       bool
}

// testSlowUploads runs two slow uploads of each case against
// Gunicorn sync-2 behind the stack: held, both workers are held (two
// connections to the app) and /fast waits; else the proxy opens no
// connection to the app while the bodies come, /fast is answered, and
// the app reads each body whole, at once.
func testSlowUploads(t *testing.T, stack string, cases []slowUploadCase) {
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.route, tc.size), func(t *testing.T) {
			s := startReal(t, lookup(t, stack, "sync-2"), tc.route, "sync-2", 1<<10)
			u, _ := url.Parse(s.run.URL() + "/upload")
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			connected := make(chan int, 2)
			ups := make([]loadgen.Upload, 2)
			for i := range 2 {
				up := loadgen.SlowUploader{URL: u, Size: tc.size, Rate: float64(tc.rate), WriteSize: 512, SndBuf: 4 << 10, Timeout: 2 * time.Minute,
					Header: http.Header{appserver.RequestIDHeader: {"up-" + strconv.Itoa(i)}}, OnConnect: func(c int) { connected <- c }}
				wg.Go(func() { ups[i] = up.Run(ctx, i) })
			}
			<-connected
			<-connected
			_, port, _ := net.SplitHostPort(s.run.AppAddr())
			if tc.held {
				slowlabtest.WaitFor(t, "both app workers held by the two slow uploads", func() bool { return slowlabtest.EstablishedTo(t, port) == 2 },
					func() string { return fmt.Sprintf("%d connections to the app", slowlabtest.EstablishedTo(t, port)) })
				if d, err := fastWithin(s.run.URL(), 2*time.Second); err == nil {
					t.Errorf("/fast answered in %v while two uploads held the workers", d)
				}
				return
			}
			// Half the uploads' time in, the proxy has opened no
			// connection to the app, and /fast is answered.
			time.Sleep(time.Duration(tc.size) * time.Second / time.Duration(2*tc.rate))
			if n := slowlabtest.EstablishedTo(t, port); n != 0 {
				t.Errorf("%d connections to the app while the bodies are still coming", n)
			}
			if _, err := fastWithin(s.run.URL(), 2*time.Second); err != nil {
				t.Errorf("/fast during the slow uploads: %v", err)
			}
			wg.Wait()
			for _, up := range ups {
				if up.Outcome != loadgen.UploadOK || up.AppBytes != tc.size {
					t.Errorf("upload %d: %s, the app read %d bytes (%v)", up.Client, up.Outcome, up.AppBytes, up.Err)
				}
				// The app read the body whole, at once.
				if !up.AppReadOK || up.AppRead > time.Second {
					t.Errorf("upload %d: the app's body reads took %v (reported %t), want the buffered body at once", up.Client, up.AppRead, up.AppReadOK)
				}
			}
		})
	}
}
