package longpoll

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// reproduce long-poll lists each run's endpoints in the Prometheus targets
// file, so a real Prometheus with alerts/ loaded scrapes the target's
// per-worker long-poll gauge and fires SlowlabWorkerFullOfLongPolls while a
// worker's threads all hold long-polls (31 on 2 x 16: one worker must be
// full), and not for a run that holds none.
func TestPrometheusAlertsWorkerFull(t *testing.T) {
	slowlabtest.Timing(t)
	rules, err := os.ReadFile("../../alerts/slowlab.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := `global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
  - job_name: slowlab-lab # each target's job label comes from the file
    file_sd_configs: [{files: [targets.json], refresh_interval: 1s}]
`
	// A test-only short `for`, so the alert fires within the test.
	prom := slowlabtest.StartPrometheus(t, cfg, map[string]string{"targets.json": "[]\n",
		"rules.yml": strings.ReplaceAll(string(rules), "for: 10s", "for: 2s")})
	const alert = `ALERTS{alertname="SlowlabWorkerFullOfLongPolls",alertstate="firing",job="slowlab-target"}`

	// A calm run first: nothing held, no alert.
	calm := short(Condition{"gthread-2x16", 0, 4})
	calm.Seconds = lab.Duration(6 * time.Second)
	env := testEnv(t, stack.NameEmbedded, false)
	env.TargetsFile = filepath.Join(prom.Dir(), "targets.json")
	if _, err := calm.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	// The full worker's run lasts until the alert fired (or, if it never
	// does, for ten minutes; the wait fails first).
	full := short(Condition{"gthread-2x16", 31, 4})
	full.Seconds, full.Wait = lab.Duration(10*time.Minute), lab.Duration(10*time.Minute)
	env2 := testEnv(t, stack.NameEmbedded, false)
	env2.TargetsFile = env.TargetsFile
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := full.Run(ctx, env2); done <- err }()
	slowlabtest.WaitFor(t, "SlowlabWorkerFullOfLongPolls firing", func() bool {
		return len(prom.Query(alert)) > 0
	}, func() string { return "held now: " + prom.Query(`max(slowlab_target_longpolls_in_progress)`).String() })
	held := prom.Query(`max(max_over_time(slowlab_target_longpolls_in_progress{job="slowlab-target"}[10m]))`)
	cancel()
	<-done
	if len(held) != 1 || held[0].Value != 16 {
		t.Errorf("most long-polls on a worker %v, want 16 (all its threads)", held)
	}
	// One target instance alerted (pending, then firing): the full run's.
	if n := prom.Query(`count(count by (instance) (max_over_time(ALERTS{alertname="SlowlabWorkerFullOfLongPolls"}[10m])))`); len(n) != 1 || n[0].Value != 1 {
		t.Errorf("targets that alerted over both runs: %v, want only the full run's", n)
	}
}
