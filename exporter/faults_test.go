package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// unitCgroups creates the child cgroup NAME.service in each of dirs (a
// test cgroup's directories), and returns its directories; they
// are removed in t.Cleanup if still there.
func unitCgroups(t *testing.T, dirs []string, name string) []string {
	t.Helper()
	var sub []string
	for _, d := range dirs {
		p := filepath.Join(d, name+".service")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		sub = append(sub, p)
	}
	t.Cleanup(func() { rmdirAll(t, sub) })
	return sub
}

func rmdirAll(t *testing.T, dirs []string) {
	t.Helper()
	for _, p := range dirs {
		if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("remove %s: %v", p, err)
		}
	}
}

// A dynamic group's cgroup removed on a real cgroup v1 hierarchy between
// the scrape's walk of the tree and the cgroup collector's read (a pod or
// unit that ends mid-scrape, many times a day on a busy node) is a group
// that is gone, as one removed before the walk is: no series and no
// failure. The other groups' metrics are served, and the collector
// succeeds. A fixed group's cgroup: the config names it, so that one
// missing is a failure, counted in slowlab_exporter_collector_success.
func TestRealDynamicCgroupRemovedMidScrape(t *testing.T) {
	slowlabtest.RequireRoot(t, "creating cgroups")
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	slowlabtest.Require(t, err == nil, "no cgroup hierarchy mounted")
	name, dirs := testCgroup(t, layout)
	unitCgroups(t, dirs, "kept")
	gone := unitCgroups(t, dirs, "zgone") // sorts after kept: over a cap of 1, summed into "other"
	groups := []Group{{Name: "units", GroupName: "${unit}", Selectors: []string{"cgroup-re:" + name + `/(?P<unit>[^/]+)\.service`}}}

	for _, tc := range []struct {
		name   string
		groups []Group
		max    int
	}{
		{"own", groups, 0},
		{"other", groups, 1}, // kept has its own series, gone is summed into "other"
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{Groups: tc.groups}, Options{MaxDynamicGroups: tc.max, Collectors: onlyCollector("cgroup")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			targets, err := e.Targets(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(targets) != 2 {
				t.Fatalf("targets %+v, want kept and gone (or other)", targets)
			}
			rmdirAll(t, gone)
			a := &adapter{c: e.collectors["cgroup"], targets: targets}
			v := slowlabtest.Values(t, a)
			if a.err != nil {
				t.Errorf("cgroup collector with a dynamic group's cgroup removed mid-scrape: %v, want no failure", a.err)
			}
			if _, ok := v[`slowlab_cgroup_cpu_usage_seconds_total{kept,kept}`]; !ok {
				t.Errorf("group kept's CPU not served: %v", v)
			}
			if tc.name == "own" {
				for key := range v {
					if strings.Contains(key, "{zgone,") {
						t.Errorf("series of the removed cgroup: %s", key)
					}
				}
			}
			for _, d := range gone {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		})
	}

	t.Run("fixed", func(t *testing.T) {
		e, err := New(Config{Groups: []Group{
			{Name: "kept", Selectors: []string{"cgroup:" + name + "/kept.service"}},
			{Name: "zgone", Selectors: []string{"cgroup:" + name + "/zgone.service"}},
		}}, Options{Collectors: onlyCollector("cgroup")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rmdirAll(t, gone)
		v := values(t, e)
		if got := v[`slowlab_exporter_collector_success{cgroup}`]; got != 0 {
			t.Errorf("collector success %v with a fixed group's cgroup missing, want 0", got)
		}
		if _, ok := v[`slowlab_cgroup_cpu_usage_seconds_total{kept}`]; !ok {
			t.Errorf("group kept's CPU not served beside the failure: %v", v)
		}
	})
}

// Cgroups made and removed on a real cgroup v1 hierarchy, and processes
// started in the cgroup that stays that exit at once, as fast as the
// kernel allows while scrapes run (each cgroup a new name: one removed
// and made again under its name between a read and the check that it is
// gone still counts as a failure): every scrape answers 200 with the
// group that stays, and no collector fails (a process that exits
// mid-read is gone, not a failure).
func TestRealCgroupChurnWhileScraping(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "creating cgroups")
	layout, err := cgroup.Detect(cgroup.DefaultRoot)
	slowlabtest.Require(t, err == nil, "no cgroup hierarchy mounted")
	name, dirs := testCgroup(t, layout)
	kept := unitCgroups(t, dirs, "kept")
	var logs slowlabtest.SyncBuffer
	e, err := New(Config{Groups: []Group{{Name: "units", GroupName: "${unit}",
		Selectors: []string{"cgroup-re:" + name + `/(?P<unit>[^/]+)\.service`}}}}, Options{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)

	stop := make(chan struct{})
	done := make(chan struct{})
	var churned atomic.Int64
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var made []string
			for _, d := range dirs {
				p := filepath.Join(d, fmt.Sprintf("churn%d.service", i))
				if os.Mkdir(p, 0o755) == nil {
					made = append(made, p)
				}
			}
			for _, p := range made {
				_ = syscall.Rmdir(p)
			}
			churned.Add(1)
		}
	}()
	procsDone := make(chan struct{})
	var exited atomic.Int64
	go func() {
		defer close(procsDone)
		// Each enters the kept cgroups and exits at once: the scrapes
		// list it, then find it gone.
		script := `for f in "$@"; do echo $$ > "$f/cgroup.procs"; done; exec true`
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := exec.Command("sh", append([]string{"-c", script, "sh"}, kept...)...).Run(); err == nil {
				exited.Add(1)
			}
		}
	}()
	defer func() { close(stop); <-done; <-procsDone }()

	const scrapes = 200
	failed := 0
	for i := range scrapes {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %d: %s: %s", i, resp.Status, body)
		}
		if !strings.Contains(body, `slowlab_cgroup_cpu_usage_seconds_total{group="kept",unit="kept"}`) {
			t.Fatalf("scrape %d: no CPU series of group kept:\n%s", i, body)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "slowlab_exporter_collector_success{") && strings.HasSuffix(line, "} 0") {
				failed++
				t.Logf("scrape %d: %s", i, line)
			}
		}
	}
	if failed > 0 {
		t.Errorf("collectors failed %d times in %d scrapes while cgroups and processes came and went (%d cgroups made and removed, %d processes exited)",
			failed, scrapes, churned.Load(), exited.Load())
	}
	if t.Failed() {
		t.Logf("the exporter's log:\n%s", logs.String())
	}
	t.Logf("%d scrapes; meanwhile %d cgroups made and removed, %d processes exited", scrapes, churned.Load(), exited.Load())
}

var _ prometheus.Collector = (*adapter)(nil)

// A process whose /proc/PID/stat is not what the kernel writes (cut
// short, or a comm with ") " and spaces in it, which a split on spaces
// misreads) beside two good ones: the odd one fails the process
// collector with its cause when it cannot be parsed, and the good ones
// are counted either way; the whole scrape is served.
func TestProcessStatUnexpected(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		fails      bool
		state      string // the odd process's state when it parses
	}{
		{"cut short", "101 (nginx) S 100 101", true, ""},
		{"not a number", "101 (nginx) S x 101 101 0 -1 4194560 100 0 0 0 50 20 0 0 20 0 1 0 12345 104857600 1200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", true, ""},
		{"comm with ) and spaces", "101 (a) R (b c) D 100 101 101 0 -1 4194560 100 0 0 0 50 20 0 0 20 0 1 0 12345 104857600 1200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", false, "disk_sleep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := copyTree(t, "testdata/fixtures/proc")
			writeFile(t, filepath.Join(proc, "101", "stat"), tc.stat)
			c := &processCollector{procFS: proc, wchanTop: 10}
			var err error
			if c.fs, err = procfs.NewFS(proc); err != nil {
				t.Fatal(err)
			}
			a := &adapter{c: c, targets: []Target{{Group: "g", PIDs: []int{100, 101, 102}}}}
			got := samples(t, a)
			if (a.err != nil) != tc.fails {
				t.Errorf("Update: %v, want a failure %t", a.err, tc.fails)
			}
			if a.err != nil && !strings.Contains(a.err.Error(), "pid 101") {
				t.Errorf("Update: %v, want the pid named", a.err)
			}
			// 102 runs, 100 sleeps.
			want := []string{`slowlab_processes{group="g",state="running"} 1`, `slowlab_processes{group="g",state="sleeping"} 1`}
			if tc.state != "" {
				want = append(want, fmt.Sprintf(`slowlab_processes{group="g",state=%q} 1`, tc.state))
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %s in\n%s", w, got)
				}
			}
		})
	}
}
