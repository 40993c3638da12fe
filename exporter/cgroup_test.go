package exporter

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// adapter makes a Collector a prometheus.Collector over fixed targets, so
// tests can use testutil; the last Update error is kept.
type adapter struct {
	c       Collector
	targets []Target
	err     error
}

func (a *adapter) Describe(chan<- *prometheus.Desc) {}
func (a *adapter) Collect(ch chan<- prometheus.Metric) {
	a.err = a.c.Update(context.Background(), a.targets, ch)
}

// copyTree copies a fixture tree (following no symlinks) into a temp dir so
// a test can break files in it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, out)
		case fi.IsDir():
			return os.MkdirAll(out, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCgroupCollectorBadInput breaks one file at a time: the collector
// reports what it could still read and fails, never panics.
func TestCgroupCollectorBadInput(t *testing.T) {
	tests := []struct {
		name, tree string
		breakIt    func(root string) error
		want       string // expected metrics for group app
		err        string
	}{
		{
			name: "v2 malformed cpu.stat", tree: "cgroup-v2",
			breakIt: func(r string) error {
				return os.WriteFile(filepath.Join(r, "slowlab/app/cpu.stat"), []byte("usage_usec twelve\n"), 0o644)
			},
			want: `
slowlab_cgroup_memory_limit_bytes{group="app"} 1.34217728e+08
slowlab_cgroup_memory_peak_bytes{group="app"} 6.0817408e+07
slowlab_cgroup_memory_usage_bytes{group="app"} 4.194304e+07
slowlab_cgroup_oom_kills_total{group="app"} 2
`,
			err: `group app: cgroup:slowlab/app: read cpu.stat: cpu.stat: bad value in line "usage_usec twelve"`,
		},
		{
			name: "v2 missing memory.current and empty cpu.max", tree: "cgroup-v2",
			breakIt: func(r string) error {
				if err := os.Remove(filepath.Join(r, "slowlab/app/memory.current")); err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(r, "slowlab/app/cpu.max"), nil, 0o644)
			},
			want: `
slowlab_cgroup_cpu_periods_total{group="app"} 4200
slowlab_cgroup_cpu_throttled_periods_total{group="app"} 1300
slowlab_cgroup_cpu_throttled_seconds_total{group="app"} 3.75
slowlab_cgroup_cpu_usage_seconds_total{group="app"} 12.5
slowlab_cgroup_memory_limit_bytes{group="app"} 1.34217728e+08
slowlab_cgroup_memory_peak_bytes{group="app"} 6.0817408e+07
slowlab_cgroup_oom_kills_total{group="app"} 2
`,
			err: "read cpu.max: cpu.max: empty file",
		},
		{
			name: "v1 garbage quota", tree: "cgroup-v1",
			breakIt: func(r string) error {
				return os.WriteFile(filepath.Join(r, "cpu,cpuacct/slowlab/app/cpu.cfs_quota_us"), []byte("lots\n"), 0o644)
			},
			want: `
slowlab_cgroup_cpu_periods_total{group="app"} 4200
slowlab_cgroup_cpu_throttled_periods_total{group="app"} 1300
slowlab_cgroup_cpu_throttled_seconds_total{group="app"} 3.75
slowlab_cgroup_cpu_usage_seconds_total{group="app"} 12.5
slowlab_cgroup_memory_limit_bytes{group="app"} 1.34217728e+08
slowlab_cgroup_memory_peak_bytes{group="app"} 6.0817408e+07
slowlab_cgroup_memory_usage_bytes{group="app"} 4.194304e+07
slowlab_cgroup_oom_kills_total{group="app"} 2
`,
			err: "read cpu.cfs_quota_us: cpu.cfs_quota_us: want an integer",
		},
		{
			name: "v2 malformed memory.events", tree: "cgroup-v2",
			breakIt: func(r string) error {
				return os.WriteFile(filepath.Join(r, "slowlab/app/memory.events"), []byte("oom_kill many\n"), 0o644)
			},
			want: `
slowlab_cgroup_cpu_limit_cores{group="app"} 0.25
slowlab_cgroup_cpu_periods_total{group="app"} 4200
slowlab_cgroup_cpu_throttled_periods_total{group="app"} 1300
slowlab_cgroup_cpu_throttled_seconds_total{group="app"} 3.75
slowlab_cgroup_cpu_usage_seconds_total{group="app"} 12.5
slowlab_cgroup_memory_limit_bytes{group="app"} 1.34217728e+08
slowlab_cgroup_memory_peak_bytes{group="app"} 6.0817408e+07
slowlab_cgroup_memory_usage_bytes{group="app"} 4.194304e+07
`,
			err: "read OOM kills: memory.events: bad value",
		},
		{
			name: "hybrid cgroup missing from memory hierarchy", tree: "cgroup-hybrid",
			breakIt: func(r string) error { return os.RemoveAll(filepath.Join(r, "memory/slowlab/app")) },
			want: `
slowlab_cgroup_cpu_limit_cores{group="app"} 0.25
slowlab_cgroup_cpu_periods_total{group="app"} 4200
slowlab_cgroup_cpu_throttled_periods_total{group="app"} 1300
slowlab_cgroup_cpu_throttled_seconds_total{group="app"} 3.75
slowlab_cgroup_cpu_usage_seconds_total{group="app"} 12.5
`,
			err: "read memory.usage_in_bytes: open ",
		},
		{
			name: "cgroup gone", tree: "cgroup-v2",
			breakIt: func(r string) error { return os.RemoveAll(filepath.Join(r, "slowlab/app")) },
			want:    "",
			err:     "read cpu.stat: open ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := copyTree(t, filepath.Join("testdata/fixtures", tt.tree))
			if err := tt.breakIt(root); err != nil {
				t.Fatal(err)
			}
			a := &adapter{c: &cgroupCollector{root: root, counters: NewCounters()}, targets: []Target{{Group: "app", Cgroup: "slowlab/app"}}}
			if got, want := samples(t, a), strings.TrimSpace(tt.want); got != want {
				t.Errorf("metrics:\n%s\nwant:\n%s", got, want)
			}
			if a.err == nil || !strings.Contains(a.err.Error(), tt.err) {
				t.Errorf("Update error = %v, want it to contain %q", a.err, tt.err)
			}
		})
	}
}

// samples collects c and returns its sample lines in text format, sorted,
// without HELP and TYPE lines, so expectations list only values.
func samples(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
