package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestMain builds the slowlab binary the embedded components run.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// cpuStat reads the cgroup's cpu.stat.
func cpuStat(t *testing.T, cg *cgroup.Cgroup) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	b, err := os.ReadFile(filepath.Join(cg.ControllerDir("cpu"), "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			m[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return m
}

// cpuUsage is the cgroup's CPU time: v1 cpuacct.usage, v2 cpu.stat usage_usec.
func cpuUsage(t *testing.T, cg *cgroup.Cgroup) time.Duration {
	t.Helper()
	if acct := filepath.Join(cg.ControllerDir("cpuacct"), "cpuacct.usage"); exists(acct) {
		b, err := os.ReadFile(acct)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ns)
	}
	return time.Duration(cpuStat(t, cg)["usage_usec"]) * time.Microsecond
}

func TestParseServer(t *testing.T) {
	for _, s := range []string{"sync-2", "sync-1", "gthread-1x4", "gthread-2x16", "async", "gevent-2x100"} {
		spec, err := ParseServer(s)
		if err != nil || spec.Name() != s {
			t.Errorf("ParseServer(%q) = %+v, %v", s, spec, err)
		}
	}
	for _, s := range []string{"", "sync", "sync-0", "gthread-2", "gthread-2x0", "async-2", "prefork-2", "sync-2x4"} {
		if _, err := ParseServer(s); err == nil || err.Error() != fmt.Sprintf("server %q: allowed %s", s, ModelSyntax()) {
			t.Errorf("ParseServer(%q): %v", s, err)
		}
	}
	if s, _ := ParseServer("gthread-2x16"); s.Slots() != 32 {
		t.Errorf("gthread-2x16 slots %d", s.Slots())
	}
	if s, _ := ParseServer("gevent-2x100"); s.Slots() != 200 || s.Name() != "gevent-2x100" {
		t.Errorf("gevent-2x100: %d slots, name %s", s.Slots(), s.Name())
	}
	if !strings.HasPrefix(ModelSyntax(), "sync-W, gthread-WxT, async, gevent-WxC") {
		t.Errorf("ModelSyntax() = %q", ModelSyntax())
	}
	if s, _ := ParseServer("async"); s.Slots() != 0 {
		t.Errorf("async slots %d", s.Slots())
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name, apps, proxy string
	}{
		{"embedded", "embedded", "embedded"},
		{"embedded+embedded", "embedded", "embedded"},
	} {
		st, note, err := Lookup(tc.name)
		if err != nil || st.describe() != tc.apps+" and "+tc.proxy || note != "" {
			t.Errorf("Lookup(%q) = %q, %q, %v", tc.name, st.describe(), note, err)
		}
	}
	for name, want := range map[string]string{
		"docker":         `--stack "docker": allowed auto, embedded, real, gunicorn-nginx, external, APP+PROXY`,
		"apache+nginx":   `--stack "apache+nginx": no app server "apache" (apps: ` + componentNames(apps) + `)`,
		"embedded+squid": `--stack "embedded+squid": no proxy "squid" (proxies: ` + componentNames(proxies) + `)`,
	} {
		if _, _, err := Lookup(name); err == nil || err.Error() != want {
			t.Errorf("Lookup(%q): %v, want %q", name, err, want)
		}
		// ValidName, which checks scenarios and flags before anything
		// runs, refuses the same names with the same reason.
		if err := ValidName(name); err == nil || "--"+err.Error() != want {
			t.Errorf("ValidName(%q): %v, want %q", name, err, want)
		}
	}
	for _, name := range []string{"auto", "embedded", "real", "gunicorn-nginx", "gunicorn+embedded", "embedded+nginx", "gunicorn+haproxy", "gunicorn+apache", "gunicorn+caddy"} {
		if err := ValidName(name); err != nil {
			t.Errorf("ValidName(%q): %v", name, err)
		}
	}
	// auto says which it chose and why.
	sync2 := Server{Model: "sync", Workers: 2, Threads: 1}
	st, note, err := Lookup("auto", sync2)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case st.Name == NameReal && note == "--stack auto: using real (gunicorn and nginx, installed)":
	case st.Name == NameEmbedded && strings.HasPrefix(note, "--stack auto: using embedded (server sync-2: gunicorn needs gunicorn on PATH (apt-get install gunicorn)") ||
		strings.HasPrefix(note, "--stack auto: using embedded (nginx needs nginx on PATH (apt-get install nginx)"):
	default:
		t.Errorf("auto: %s, %q", st.Name, note)
	}
}

// missingApp is a real app that is never installed.
type missingApp struct{ gunicornApp }

func (missingApp) Name() string       { return "missing" }
func (missingApp) Needs() []string    { return []string{"slowlab-no-such-program"} }
func (missingApp) Packages() []string { return []string{"slowlab-no-such-package"} }
func (missingApp) Models() []Model    { return []Model{{Name: "missingmodel", Sized: true}} }

// A real stack runs what is installed: a server whose app is missing is
// refused by real, names the package to install, and makes auto choose
// the embedded stack, saying why; servers whose apps are there still run.
func TestLookupMissingApp(t *testing.T) {
	RegisterApp(missingApp{})
	t.Cleanup(func() { apps = apps[:len(apps)-1] })
	slowlabtest.RequireTool(t, "gunicorn")
	slowlabtest.RequireTool(t, "nginx")
	missing := Server{Model: "missingmodel", Workers: 2, Threads: 1}
	const why = "server missingmodel-2: missing needs slowlab-no-such-program on PATH (apt-get install slowlab-no-such-package)"
	if _, _, err := Lookup(NameReal, missing); err == nil || err.Error() != why {
		t.Errorf("real with a missing app: %v, want %q", err, why)
	}
	st, note, err := Lookup(NameAuto, Server{Model: "sync", Workers: 2, Threads: 1}, missing)
	if err != nil || st.Name != NameEmbedded || note != "--stack auto: using embedded ("+why+")" {
		t.Errorf("auto with a missing app: %s, %q, %v", st.Name, note, err)
	}
	st, note, err = Lookup(NameAuto, Server{Model: "gthread", Workers: 1, Threads: 4})
	if err != nil || st.Name != NameReal || note != "--stack auto: using real (gunicorn and nginx, installed)" {
		t.Errorf("auto without it: %s, %q, %v", st.Name, note, err)
	}
	if _, _, err := Lookup(NameReal); err != nil {
		t.Errorf("real without servers, gunicorn installed: %v", err)
	}
}

// The embedded app and proxy serve every route; on a proxied route the
// load generator's URL is the proxy's, which relays to the app.
func TestEmbeddedRoutes(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it starts the embedded stack")
	st, _, _ := Lookup(NameEmbedded)
	for _, route := range Routes {
		t.Run(string(route), func(t *testing.T) {
			s := startReal(t, st, route, "gthread-1x4", 300_000)
			resp, body := get(t, s.run.URL()+"/large", map[string]string{appserver.RequestIDHeader: "e-1"})
			if resp.StatusCode != http.StatusOK || len(body) != 300_000 {
				t.Fatalf("/large: %s, %d bytes", resp.Status, len(body))
			}
			if v := waitAppSend(t, s.run, "e-1"); !(v >= 0 && v < 10) {
				t.Errorf("app_send_s %v", v)
			}
			eps := s.run.MetricsEndpoints()
			if eps["slowlab-target"] == "" || route.Proxied() != (eps["slowlab-proxy"] != "") {
				t.Errorf("metrics endpoints %v", eps)
			}
			if hc, ok := s.run.HeldCounter(); !ok {
				t.Error("the embedded app counts no held long-polls")
			} else if held, err := hc.LongPollsHeld(context.Background()); err != nil || len(held) != 1 {
				t.Errorf("held %v, %v: want one worker", held, err)
			}
			if err := s.run.Failed(); err != nil {
				t.Error(err)
			}
			s.stopAndCheck(t)
		})
	}
}

// NGINX works in front of the embedded app: a stack is an app × a proxy.
func TestNginxInFrontOfEmbeddedApp(t *testing.T) {
	slowlabtest.Timing(t)
	st := lookup(t, "embedded+nginx")
	for _, route := range []Route{RouteBufferingOff, RouteBufferingOn} {
		s := startReal(t, st, route, "sync-2", 1<<20)
		resp, body := get(t, s.run.URL()+"/large", map[string]string{appserver.RequestIDHeader: "n-1"})
		if resp.StatusCode != http.StatusOK || len(body) != 1<<20 || resp.Header.Get("Server") == "" || !strings.HasPrefix(resp.Header.Get("Server"), "nginx") {
			t.Errorf("%s /large: %s, %d bytes, Server %q: want NGINX relaying the embedded app", route, resp.Status, len(body), resp.Header.Get("Server"))
		}
		if v := waitAppSend(t, s.run, "n-1"); !(v >= 0 && v < 10) {
			t.Errorf("app_send_s %v", v)
		}
		if td := s.run.TempDirs(); len(td) != 2 || filepath.Base(td[0]) != "proxy_temp" || filepath.Base(td[1]) != "client_body_temp" {
			t.Errorf("TempDirs %v: want NGINX's proxy_temp and client_body_temp", td)
		}
		s.stopAndCheck(t)
	}
}

// TestSeveralProxies composes APP+PROXY+PROXY...: each route runs behind
// the proxy that runs it (the one that owns it, else the first that owns
// none), a route none of them runs is refused by name before anything
// starts, and every proxy is a component of the stack.
func TestSeveralProxies(t *testing.T) {
	st, _, err := Lookup("embedded+nginx+haproxy+caddy")
	if err != nil && !strings.Contains(err.Error(), "needs") {
		t.Fatal(err)
	}
	if st, err = composeName("embedded+nginx+haproxy+caddy"); err != nil {
		t.Fatal(err)
	}
	if got := st.describe(); got != "embedded and nginx and haproxy and caddy" {
		t.Errorf("components: %s", got)
	}
	for route, want := range map[Route]string{
		RouteBufferingOn:        "nginx",
		RouteBufferingOff:       "nginx",
		RouteHAProxyDefault:     "haproxy",
		"caddy-buffer-response": "caddy",
	} {
		if got := st.ProxyFor(route).Name(); got != want {
			t.Errorf("ProxyFor(%s) = %s, want %s", route, got, want)
		}
		checkRouteRefused(t, st, route, "")
	}
	checkRouteRefused(t, st, "apache-default", "route apache-default: only the apache proxy runs it (the embedded+nginx+haproxy+caddy stack's proxy is nginx)")
	// Without a proxy that owns no routes, NGINX's routes are refused by
	// the first proxy.
	own, err := composeName("embedded+haproxy+caddy")
	if err != nil {
		t.Fatal(err)
	}
	checkRouteRefused(t, own, RouteBufferingOn, "route proxy-buffering-on: haproxy cannot run it (its routes: direct, haproxy-default, haproxy-buffer-request)")
	for name, want := range map[string]string{
		"embedded+nginx+nginx": `stack "embedded+nginx+nginx": proxy "nginx" named twice`,
		"embedded+nginx+squid": `stack "embedded+nginx+squid": no proxy "squid" (proxies: ` + componentNames(proxies) + `)`,
		"embedded+nginx+":      `stack "embedded+nginx+": no proxy "" (proxies: ` + componentNames(proxies) + `)`,
	} {
		if err := ValidName(name); err == nil || err.Error() != want {
			t.Errorf("ValidName(%q): %v, want %q", name, err, want)
		}
	}
}

// describe names the components: "gunicorn and nginx".
func (s Stack) describe() string {
	var names []string
	for _, c := range s.components() {
		names = append(names, c.Name())
	}
	return strings.Join(names, " and ")
}
