package exporter

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
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

func TestParseCPUStat(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]uint64
		err      string
	}{
		{name: "v1", in: "nr_periods 4200\nnr_throttled 1300\nthrottled_time 3750000000\n",
			want: map[string]uint64{"nr_periods": 4200, "nr_throttled": 1300, "throttled_time": 3750000000}},
		{name: "v2 without cpu controller", in: "usage_usec 800000\nuser_usec 533333\nsystem_usec 266667\n",
			want: map[string]uint64{"usage_usec": 800000, "user_usec": 533333, "system_usec": 266667}},
		{name: "blank lines and no final newline", in: "\nusage_usec 1\n\nnr_periods 2", want: map[string]uint64{"usage_usec": 1, "nr_periods": 2}},
		{name: "empty", in: "", want: map[string]uint64{}},
		{name: "three fields", in: "usage_usec 1 2\n", err: `bad line "usage_usec 1 2": want KEY VALUE`},
		{name: "key only", in: "usage_usec\n", err: `bad line "usage_usec": want KEY VALUE`},
		{name: "negative", in: "nr_periods -1\n", err: `bad value in line "nr_periods -1"`},
		{name: "garbage", in: "nr_periods lots\n", err: `bad value in line "nr_periods lots"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCPUStat(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v, want prefix %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in   string
		want cpuMax
		err  bool
	}{
		{in: "2500 10000\n", want: cpuMax{quota: 2500, period: 10000}},
		{in: "max 100000\n", want: cpuMax{period: 100000, unlimited: true}},
		{in: "max\n", err: true},
		{in: "2500 0\n", err: true},
		{in: "-1 100000\n", err: true},
		{in: "", err: true},
		{in: "1 2 3", err: true},
	}
	for _, tt := range tests {
		got, err := parseCPUMax(strings.NewReader(tt.in))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseCPUMax(%q) = %+v, %v; want %+v, error %t", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseSingleValues(t *testing.T) {
	if v, err := parseUint(strings.NewReader("12500000000\n")); err != nil || v != 12500000000 {
		t.Errorf("parseUint = %d, %v", v, err)
	}
	for _, bad := range []string{"", "\n", "-1", "1.5", "12 13"} {
		if _, err := parseUint(strings.NewReader(bad)); err == nil {
			t.Errorf("parseUint(%q): no error", bad)
		}
	}
	if v, err := parseInt(strings.NewReader("-1\n")); err != nil || v != -1 {
		t.Errorf("parseInt = %d, %v", v, err)
	}
	if _, err := parseInt(strings.NewReader("max")); err == nil {
		t.Error("parseInt(max): no error")
	}
	for in, want := range map[string]limit{"max\n": {unlimited: true}, "134217728\n": {value: 134217728}} {
		if got, err := parseMax(strings.NewReader(in)); err != nil || got != want {
			t.Errorf("parseMax(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := parseMax(strings.NewReader("unlimited")); err == nil {
		t.Error("parseMax(unlimited): no error")
	}
}

func TestParseCgroupProcs(t *testing.T) {
	got, err := parseCgroupProcs(strings.NewReader("1\n400\n\n12\n"))
	if err != nil || !reflect.DeepEqual(got, []int{1, 400, 12}) {
		t.Errorf("parseCgroupProcs = %v, %v", got, err)
	}
	for _, bad := range []string{"abc\n", "0\n", "-5\n", "1 2\n"} {
		if _, err := parseCgroupProcs(strings.NewReader(bad)); err == nil {
			t.Errorf("parseCgroupProcs(%q): no error", bad)
		}
	}
}

func TestDetectCgroups(t *testing.T) {
	tests := []struct {
		root        string
		version     string
		cpu, memory string // directory of slowlab/app for the controller
		v1          bool
	}{
		{root: "cgroup-v1", version: "v1", cpu: "cpu/slowlab/app", memory: "memory/slowlab/app", v1: true},
		{root: "cgroup-v2", version: "v2", cpu: "slowlab/app", memory: "slowlab/app"},
		{root: "cgroup-hybrid", version: "hybrid", cpu: "cpu/slowlab/app", memory: "memory/slowlab/app", v1: true},
	}
	for _, tt := range tests {
		root := filepath.Join("testdata/fixtures", tt.root)
		l, err := detectCgroups(root)
		if err != nil {
			t.Fatalf("%s: %v", tt.root, err)
		}
		if l.version != tt.version {
			t.Errorf("%s: version %s, want %s", tt.root, l.version, tt.version)
		}
		for ctrl, want := range map[string]string{"cpu": tt.cpu, "memory": tt.memory} {
			dir, v1 := l.controllerDir(ctrl, "slowlab/app")
			if dir != filepath.Join(root, want) || v1 != tt.v1 {
				t.Errorf("%s: controllerDir(%s) = %s, %t; want %s, %t", tt.root, ctrl, dir, v1, filepath.Join(root, want), tt.v1)
			}
		}
	}
	if _, err := detectCgroups(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no cgroup v1 or v2 hierarchy") {
		t.Errorf("empty root: %v", err)
	}
	if _, err := detectCgroups(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing root: no error")
	}
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
`,
			err: "read cpu.cfs_quota_us: cpu.cfs_quota_us: want an integer",
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
			a := &adapter{c: &cgroupCollector{root: root}, targets: []Target{{Group: "app", Cgroup: "slowlab/app"}}}
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
