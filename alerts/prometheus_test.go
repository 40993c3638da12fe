package alerts

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

var forClause = regexp.MustCompile(`(?m)^(\s+for:) \S+$`)

// rulesPrometheus starts a real Prometheus that scrapes the exporter at
// metricsURL (and those at more, as further instances of the job) and
// evaluates slowlab.rules.yml every second, with every `for` cut to 2 s
// and then rewritten by rewrite (nil: as it is).
func rulesPrometheus(t *testing.T, metricsURL string, rewrite func(rules string) string, more ...string) *slowlabtest.Prometheus {
	t.Helper()
	rules, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	shortened := forClause.ReplaceAllString(string(rules), "$1 2s")
	if rewrite != nil {
		shortened = rewrite(shortened)
	}
	var targets []string
	for _, u := range append([]string{metricsURL}, more...) {
		targets = append(targets, fmt.Sprintf("%q", strings.TrimPrefix(u, "http://")))
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
  - job_name: slowlab-exporter
    static_configs: [{targets: [%s]}]
`, strings.Join(targets, ", "))
	return slowlabtest.StartPrometheus(t, cfg, map[string]string{"rules.yml": shortened})
}

// TestProductionAlertsOnRealGunicorn runs the production rules on a real
// Prometheus that scrapes the exporter watching a real Gunicorn with two
// sync workers, and has clients connect to it and send nothing: both
// workers take one each and block reading it, the rest wait in the listen
// backlog. SlowlabWorkersWaitingForClients fires for the app's group, and
// once the connections have been quiet for a minute
// SlowlabIdleConnectionsHigh does too. Every `for` is cut to 2 s and the
// rule's minute of quiet to the exporter's 10 s bucket (the buckets are
// the exporter's, tested there; here the rules' logic on real series).
func TestProductionAlertsOnRealGunicorn(t *testing.T) {
	slowlabtest.RequireRoot(t, "reading the workers' kernel stacks (sk_wait_data)")
	r, port, metricsURL := watchedSync2(t, "alerts", 0)

	prom := rulesPrometheus(t, metricsURL, func(rules string) string {
		shortened := strings.ReplaceAll(rules, `quiet="60s"`, `quiet="10s"`)
		if !strings.Contains(shortened, `quiet="10s"`) {
			t.Fatal(`the rules no longer query quiet="60s": update this test`)
		}
		return shortened
	})

	alert := func(name string) string {
		return fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing",group="app"}`, name)
	}
	// Before any client: the workers wait for connections, not data.
	slowlabtest.WaitFor(t, "5 scrapes of the app's group", func() bool {
		v := prom.Query(`count_over_time(slowlab_processes{group="app",state="sleeping"}[1m])`)
		return len(v) > 0 && v[0].Value >= 5
	}, nil)
	for _, name := range []string{"SlowlabWorkersWaitingForClients", "SlowlabIdleConnectionsHigh", "SlowlabAcceptQueueWhileIdle"} {
		if v := prom.Query(alert(name)); len(v) > 0 {
			t.Errorf("%s firing before any client connected: %v", name, v)
		}
	}
	acceptQueue := fmt.Sprintf(`slowlab_socket_accept_queue{group="app",port=%q}`, port)
	if v := prom.Query(acceptQueue); len(v) != 1 || v[0].Value != 0 {
		t.Errorf("accept queue before any client: %v, want 0", v)
	}

	const clients = 12
	for range clients {
		c, err := net.Dial("tcp4", r.AppAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	detail := func() string {
		return fmt.Sprintf("sk_wait_data %v, quiet %v, established %v",
			prom.Query(`slowlab_process_wchan{group="app",wchan="sk_wait_data"}`),
			prom.Query(`slowlab_sockets_quiet{group="app",side="accepted"}`),
			prom.Query(`slowlab_sockets{group="app",state="established"}`))
	}
	slowlabtest.WaitFor(t, "SlowlabWorkersWaitingForClients firing", func() bool {
		return len(prom.Query(alert("SlowlabWorkersWaitingForClients"))) > 0
	}, detail)
	slowlabtest.WaitFor(t, "SlowlabIdleConnectionsHigh firing", func() bool {
		return len(prom.Query(alert("SlowlabIdleConnectionsHigh"))) > 0
	}, detail)
	if v := prom.Query(`slowlab_sockets_quiet{group="app",side="accepted",quiet="10s"}`); len(v) != 1 || v[0].Value != clients {
		t.Errorf("quiet for 10 s: %v, want the %d idle clients", v, clients)
	}
	// Each of the 2 sync workers took one client and waits on it: the
	// other clients wait in the accept queue, where /fast would too.
	slowlabtest.WaitFor(t, "SlowlabAcceptQueueWhileIdle firing", func() bool {
		return len(prom.Query(alert("SlowlabAcceptQueueWhileIdle"))) > 0
	}, func() string { return fmt.Sprintf("accept queue %v; %s", prom.Query(acceptQueue), detail()) })
	if v := prom.Query(acceptQueue); len(v) != 1 || v[0].Value != clients-2 {
		t.Errorf("accept queue with %d idle clients on 2 sync workers: %v, want %d", clients, v, clients-2)
	}
	if v := prom.Query(fmt.Sprintf(`slowlab_socket_accept_queue_limit{group="app",port=%q}`, port)); len(v) != 1 || v[0].Value < clients {
		t.Errorf("accept queue limit %v, want at least the %d clients it holds", v, clients)
	}
}
