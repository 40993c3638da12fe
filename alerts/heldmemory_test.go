package alerts

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// ruleThresholds returns the byte thresholds alert's expression compares
// with (the right-hand sides of its ">= N * 1024 * 1024"), in order.
func ruleThresholds(t *testing.T, alert string) []float64 {
	t.Helper()
	groups, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	product := regexp.MustCompile(`>=\s*(\d+(?:\s*\*\s*\d+)*)`)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != alert {
				continue
			}
			var out []float64
			for _, m := range product.FindAllStringSubmatch(r.Expr, -1) {
				v := 1.0
				for _, f := range strings.Split(m[1], "*") {
					n, err := strconv.Atoi(strings.TrimSpace(f))
					if err != nil {
						t.Fatalf("%s: %q: %v", alert, m[1], err)
					}
					v *= float64(n)
				}
				out = append(out, v)
			}
			return out
		}
	}
	t.Fatalf("no alert %s in %s", alert, RulesFile)
	return nil
}

// The series of group "proxy" the held-memory tests read.
const (
	rssKey     = "slowlab_process_resident_memory_bytes{proxy}"
	notSentKey = "slowlab_socket_notsent_bytes{proxy,accepted}"
	connsKey   = "slowlab_sockets{proxy,established}"
	tempKey    = "slowlab_proxy_temp_files{proxy}"
	fromAppKey = "slowlab_socket_receive_queue_bytes{proxy,connected}"
	cgroupKey  = "slowlab_cgroup_memory_usage_bytes{proxy}"
)

// slowReaders is how many slow readers the held-memory tests start.
const slowReaders = 2

// proxyMemory is the proxy's memory limit in the held-memory tests: twice
// the published 96 MiB. Caddy holding two 16 MiB responses grows by 60
// MiB or more from about 34 MiB, near the published limit, where its
// cgroup killed it in 1 of 10 runs: the proxy gone, its series at 0 and
// nothing left to alert on. The rule reads no limit; what it fires on is
// the memory held.
const proxyMemory = 192 << 20

// watchProxy starts Gunicorn sync-2 behind stackName's proxy on route,
// under the published limits but the proxy's memory (proxyMemory; root),
// serving a 16 MiB /large, and an exporter whose group "proxy" is the
// proxy's cgroup and
// temp dirs. It returns the stack, the exporter and its values once the
// proxy has no connection (the lab's check that it serves may leave one
// in keep-alive: Apache's for up to its KeepAliveTimeout, 5 s).
func watchProxy(t *testing.T, stackName string, route stack.Route) (*stack.Running, *exporter.Exporter, map[string]float64) {
	t.Helper()
	slowlabtest.EndToEnd(t, "it starts a stack")
	r := labtest.StartOwnWith(t, stackName, route, "sync-2", 16<<20, func(st *stack.Stack, _ *stack.Deployment) {
		if l, ok := st.Limits["proxy"]; ok {
			l.MemoryBytes = proxyMemory
			st.Limits["proxy"] = l
		}
	})
	e, err := exporter.New(exporter.Config{Groups: []exporter.Group{{Name: "proxy", Selectors: r.Groups()["proxy"], TempDirs: r.TempDirs()}}},
		exporter.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var before map[string]float64
	slowlabtest.WaitFor(t, "the proxy with no connection before the readers", func() bool {
		before = slowlabtest.Values(t, e)
		return before[rssKey] > 0 && before[connsKey] == 0
	}, func() string { return fmt.Sprintf("RSS %v, established %v", before[rssKey], before[connsKey]) })
	return r, e, before
}

// startSlowReaders starts two slow readers of r's /large at rate bytes a
// second, stopped when the test ends.
func startSlowReaders(t *testing.T, r *stack.Running, rate float64) {
	t.Helper()
	u, _ := url.Parse(r.URL() + "/large")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range slowReaders {
		sr := loadgen.SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: rate, Timeout: time.Minute,
			Header: http.Header{appserver.RequestIDHeader: {"held-" + strconv.Itoa(i)}}}
		wg.Go(func() { sr.Run(ctx, i) })
	}
}

// watchSlowReaders is watchProxy with two slow readers at 2 MiB/s (8 s
// each) started once the exporter has read the proxy with no client.
func watchSlowReaders(t *testing.T, stackName string, route stack.Route) (*exporter.Exporter, map[string]float64) {
	t.Helper()
	r, e, before := watchProxy(t, stackName, route)
	startSlowReaders(t, r, 2<<20)
	return e, before
}

// heldThresholds are SlowlabResponsesHeldInMemory's memory held and
// memory per connection.
func heldThresholds(t *testing.T) (held, perConn float64) {
	t.Helper()
	th := ruleThresholds(t, "SlowlabResponsesHeldInMemory")
	if len(th) != 2 {
		t.Fatalf("SlowlabResponsesHeldInMemory compares with %v: want the memory held and the memory per connection", th)
	}
	return th[0], th[1]
}

func mib(v float64) float64 { return v / (1 << 20) }

// TestResponsesHeldInMemoryOnRealCaddy: the exporter watching a real
// Caddy on caddy-buffer-response (buffer_responses) in front of Gunicorn
// sync-2 (the proxy's memory limit proxyMemory), while two slow readers
// download 16 MiB each at 2 MiB/s, shows what SlowlabResponsesHeldInMemory
// fires on: the proxy's resident memory grown past the rule's threshold
// and past its per-connection threshold, its clients' windows closed on
// unsent bytes, and no temp file. Caddy has read both responses within
// about a second, so the test ends long before the 8 s downloads do.
func TestResponsesHeldInMemoryOnRealCaddy(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "caddy")
	held, perConn := heldThresholds(t)
	e, before := watchSlowReaders(t, "gunicorn+caddy", stack.RouteCaddyBufferResponse)
	var v map[string]float64
	grown := func() float64 { return v[rssKey] - before[rssKey] }
	slowlabtest.WaitFor(t, "Caddy holding both responses in memory for the slow readers", func() bool {
		v = slowlabtest.Values(t, e)
		// Caddy is done with the app once nothing of it is left unread
		// and the readers' are its only connections.
		return grown() >= held && grown()/max(v[connsKey], 1) >= perConn && v[notSentKey] > 0 && v[connsKey] == slowReaders && v[fromAppKey] == 0
	}, func() string {
		return fmt.Sprintf("RSS %.1f MiB from %.1f (want +%.0f MiB, +%.1f MiB per connection), established %v (want the %d readers'), not sent %.1f MiB, unread from the app %.1f MiB",
			mib(v[rssKey]), mib(before[rssKey]), mib(held), mib(perConn), v[connsKey], slowReaders, mib(v[notSentKey]), mib(v[fromAppKey]))
	})
	t.Logf("RSS %.1f -> %.1f MiB, cgroup memory %.1f -> %.1f MiB, %v established, %.1f MiB not sent to the readers, %.1f MiB unread from the app",
		mib(before[rssKey]), mib(v[rssKey]), mib(before[cgroupKey]), mib(v[cgroupKey]), v[connsKey], mib(v[notSentKey]), mib(v[fromAppKey]))
	// No temp file: the series is there (the collector read every fd) and 0.
	if n, ok := v[tempKey]; !ok || n != 0 {
		t.Errorf("temp files %v (reported: %t), want 0: Caddy buffers in memory only", n, ok)
	}
	for _, c := range []string{"process", "sockets", "tempfiles"} {
		if s := v["slowlab_exporter_collector_success{"+c+"}"]; s != 1 {
			t.Errorf("collector %s success %v", c, s)
		}
	}
}

// TestResponsesNotHeldInMemoryOnRealProxies: the same two slow readers
// behind a proxy that relays (HAProxy, Caddy as shipped, Apache at its
// defaults) or spools (NGINX, proxy_buffering on). The exporter sees the
// readers (their windows closed on unsent bytes) and what holds the
// responses instead of the proxy's memory: the app, whose bytes wait
// unread on the proxy's connections to it (4 established: the readers'
// and 2 to the app), or NGINX's temp files (2; only the readers'
// connections, nothing from the app unread). No proxy process waits in a
// socket write (sk_stream_wait_memory), and only NGINX has temp files. The
// proxy's RSS grows by
// less than SlowlabResponsesHeldInMemory's per-connection threshold for
// each connection, and its temp-file clause holds NGINX off as well.
func TestResponsesNotHeldInMemoryOnRealProxies(t *testing.T) {
	slowlabtest.Timing(t)
	held, perConn := heldThresholds(t)
	for _, tc := range []struct {
		stack, tool string
		route       stack.Route
		spools      bool
	}{
		{"gunicorn+nginx", "nginx", stack.RouteBufferingOn, true},
		{"gunicorn+haproxy", "haproxy", stack.RouteHAProxyDefault, false},
		{"gunicorn+caddy", "caddy", stack.RouteCaddyDefault, false},
		{"gunicorn+apache", "apache2", stack.RouteApacheDefault, false},
	} {
		t.Run(string(tc.route), func(t *testing.T) {
			slowlabtest.RequireTool(t, tc.tool)
			e, before := watchSlowReaders(t, tc.stack, tc.route)
			var v map[string]float64
			what := "the app's bytes unread on the proxy's 2 connections to it"
			if tc.spools {
				what = "NGINX spooling both responses to temp files"
			}
			slowlabtest.WaitFor(t, what+" while the readers' windows are closed", func() bool {
				v = slowlabtest.Values(t, e)
				if tc.spools {
					return v[tempKey] == slowReaders && v[connsKey] == slowReaders && v[fromAppKey] == 0 && v[notSentKey] > 0
				}
				return v[connsKey] == 2*slowReaders && v[fromAppKey] > 0 && v[notSentKey] > 0
			}, func() string {
				return fmt.Sprintf("established %v, temp files %v, unread from the app %.1f MiB, not sent %.1f MiB", v[connsKey], v[tempKey], mib(v[fromAppKey]), mib(v[notSentKey]))
			})
			grown := v[rssKey] - before[rssKey]
			t.Logf("RSS %.1f -> %.1f MiB, cgroup memory %.1f -> %.1f MiB, %v established, %v temp files (%.1f MiB), %.1f MiB not sent to the readers, %.1f MiB unread from the app",
				mib(before[rssKey]), mib(v[rssKey]), mib(before[cgroupKey]), mib(v[cgroupKey]), v[connsKey], v[tempKey],
				mib(v["slowlab_proxy_temp_logical_bytes{proxy}"]), mib(v[notSentKey]), mib(v[fromAppKey]))
			if n, ok := v[tempKey]; !tc.spools && (!ok || n != 0) {
				t.Errorf("temp files %v (reported: %t), want 0: %s keeps none", n, ok, tc.tool)
			}
			// An event loop: a slow client never blocks it in a write.
			if n := v["slowlab_process_wchan{proxy,sk_stream_wait_memory}"]; n != 0 {
				t.Errorf("%v proxy processes in sk_stream_wait_memory", n)
			}
			if grown >= held || grown/v[connsKey] >= perConn {
				t.Errorf("RSS grew %.1f MiB (%.2f MiB per connection) with the readers: SlowlabResponsesHeldInMemory would count it (%.0f MiB, %.0f MiB per connection)",
					mib(grown), mib(grown/v[connsKey]), mib(held), mib(perConn))
			}
		})
	}
}

// TestResponsesHeldInMemoryFiresOnRealCaddy runs the rule itself in a
// real Prometheus that scrapes the exporter watching real Caddy on
// caddy-buffer-response every second (every `for` cut to 2 s): it is
// quiet while Caddy is idle and fires for Caddy's group once two slow
// readers (1 MiB/s, 16 s each) have it hold their responses.
func TestResponsesHeldInMemoryFiresOnRealCaddy(t *testing.T) {
	slowlabtest.RequireTool(t, "caddy")
	r, e, _ := watchProxy(t, "gunicorn+caddy", stack.RouteCaddyBufferResponse)
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	prom := rulesPrometheus(t, srv.URL, nil)
	const firing = `ALERTS{alertname="SlowlabResponsesHeldInMemory",alertstate="firing",group="proxy"}`
	// The idle memory the rule's lowest of the hour starts from.
	slowlabtest.WaitFor(t, "3 scrapes of idle Caddy", func() bool {
		v := prom.Query(`count_over_time(slowlab_process_resident_memory_bytes{group="proxy"}[1m])`)
		return len(v) > 0 && v[0].Value >= 3
	})
	if v := prom.Query(firing); len(v) > 0 {
		t.Fatalf("SlowlabResponsesHeldInMemory firing on idle Caddy: %v", v)
	}
	startSlowReaders(t, r, 1<<20)
	slowlabtest.WaitFor(t, "SlowlabResponsesHeldInMemory firing for Caddy's group", func() bool { return len(prom.Query(firing)) > 0 },
		func() string {
			return fmt.Sprintf("RSS above its lowest %v, established %v, not sent %v", prom.Query(
				`slowlab_process_resident_memory_bytes{group="proxy"} - min_over_time(slowlab_process_resident_memory_bytes{group="proxy"}[1h])`),
				prom.Query(`slowlab_sockets{group="proxy",state="established"}`), prom.Query(`slowlab_socket_notsent_bytes{group="proxy",side="accepted"}`))
		})
	t.Logf("firing: %v", prom.Query(firing))
}
