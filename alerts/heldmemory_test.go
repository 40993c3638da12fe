package alerts

import (
	"context"
	"fmt"
	"net/http"
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

// TestResponsesHeldInMemoryOnRealCaddy: the exporter watching a real
// Caddy on caddy-buffer-response (buffer_responses) in front of Gunicorn
// sync-2, under the proxy's published limits, while two slow readers
// download 16 MiB each at 2 MiB/s, shows what SlowlabResponsesHeldInMemory
// fires on: the proxy's resident memory grown past the rule's threshold
// and past its per-connection threshold, its clients' windows closed on
// unsent bytes, and no temp file. Caddy has read both responses within
// about a second, so the test ends long before the 8 s downloads do.
func TestResponsesHeldInMemoryOnRealCaddy(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "caddy")
	th := ruleThresholds(t, "SlowlabResponsesHeldInMemory")
	if len(th) != 2 {
		t.Fatalf("SlowlabResponsesHeldInMemory compares with %v: want the memory held and the memory per connection", th)
	}
	held, perConn := th[0], th[1]
	const size, rate, readers = 16 << 20, 2 << 20, 2
	r := labtest.StartOwn(t, "gunicorn+caddy", stack.RouteCaddyBufferResponse, "sync-2", size)
	e, err := exporter.New(exporter.Config{Groups: []exporter.Group{{Name: "proxy", Selectors: r.Groups()["proxy"], TempDirs: r.TempDirs()}}},
		exporter.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		rss      = "slowlab_process_resident_memory_bytes{proxy}"
		notSent  = "slowlab_socket_notsent_bytes{proxy,accepted}"
		conns    = "slowlab_sockets{proxy,established}"
		temp     = "slowlab_proxy_temp_files{proxy}"
		fromApp  = "slowlab_socket_receive_queue_bytes{proxy,connected}"
		cgMemory = "slowlab_cgroup_memory_usage_bytes{proxy}"
	)
	before := slowlabtest.Values(t, e)
	if before[rss] == 0 || before[conns] != 0 {
		t.Fatalf("before any reader: RSS %v, established %v; want Caddy's memory and no connection", before[rss], before[conns])
	}

	u, _ := url.Parse(r.URL() + "/large")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range readers {
		sr := loadgen.SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: rate, Timeout: time.Minute,
			Header: http.Header{appserver.RequestIDHeader: {"held-" + strconv.Itoa(i)}}}
		wg.Go(func() { sr.Run(ctx, i) })
	}
	var v map[string]float64
	grown := func() float64 { return v[rss] - before[rss] }
	slowlabtest.WaitFor(t, "Caddy holding both responses in memory for the slow readers", func() bool {
		v = slowlabtest.Values(t, e)
		// Caddy is done with the app once nothing of it is left unread
		// and the readers' are its only connections.
		return grown() >= held && grown()/max(v[conns], 1) >= perConn && v[notSent] > 0 && v[conns] == readers && v[fromApp] == 0
	}, func() string {
		return fmt.Sprintf("RSS %.1f MiB from %.1f (want +%.0f MiB, +%.1f MiB per connection), established %v (want the %d readers'), not sent %.1f MiB, unread from the app %.1f MiB",
			v[rss]/(1<<20), before[rss]/(1<<20), held/(1<<20), perConn/(1<<20), v[conns], readers, v[notSent]/(1<<20), v[fromApp]/(1<<20))
	})
	t.Logf("RSS %.1f -> %.1f MiB, cgroup memory %.1f -> %.1f MiB, %v established, %.1f MiB not sent to the readers, %.1f MiB unread from the app",
		before[rss]/(1<<20), v[rss]/(1<<20), before[cgMemory]/(1<<20), v[cgMemory]/(1<<20), v[conns], v[notSent]/(1<<20), v[fromApp]/(1<<20))
	// No temp file: the series is there (the collector read every fd) and 0.
	if n, ok := v[temp]; !ok || n != 0 {
		t.Errorf("temp files %v (reported: %t), want 0: Caddy buffers in memory only", n, ok)
	}
	for _, c := range []string{"process", "sockets", "tempfiles"} {
		if s := v["slowlab_exporter_collector_success{"+c+"}"]; s != 1 {
			t.Errorf("collector %s success %v", c, s)
		}
	}
}
