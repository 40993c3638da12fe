package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestParseKeyed(t *testing.T) {
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
			got, err := ParseKeyed(strings.NewReader(tt.in))
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

func TestParsePids(t *testing.T) {
	got, err := ParsePids(strings.NewReader("1\n400\n\n12\n"))
	if err != nil || !reflect.DeepEqual(got, []int{1, 400, 12}) {
		t.Errorf("parsePids = %v, %v", got, err)
	}
	for _, bad := range []string{"abc\n", "0\n", "-5\n", "1 2\n"} {
		if _, err := ParsePids(strings.NewReader(bad)); err == nil {
			t.Errorf("ParsePids(%q): no error", bad)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	in := "12:pids:/user.slice\n4:cpu,cpuacct:/slowlab/run/loadgen\n1:name=systemd:/init.scope\n0::/system.slice/x.service\nbroken\n"
	got, err := ParseProcCgroup(strings.NewReader(in))
	want := map[string]string{"pids": "/user.slice", "cpu": "/slowlab/run/loadgen", "cpuacct": "/slowlab/run/loadgen",
		"name=systemd": "/init.scope", "": "/system.slice/x.service"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseProcCgroup = %v, %v; want %v", got, err, want)
	}
}

func TestVersion(t *testing.T) {
	mk := func(files ...string) string {
		root := t.TempDir()
		for _, f := range files {
			os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
			os.WriteFile(filepath.Join(root, f), nil, 0o644)
		}
		return root
	}
	for root, want := range map[string]string{
		mk("cgroup.controllers"):                             "v2",
		mk("cpu/cgroup.procs", "memory/cgroup.procs"):        "v1",
		mk("cpu/cgroup.procs", "unified/cgroup.controllers"): "hybrid",
		mk(): "none",
	} {
		if got := Version(root); got != want {
			t.Errorf("Version = %q, want %q", got, want)
		}
	}
}

func FuzzParseKeyed(f *testing.F) {
	slowlabtest.SeedFiles(f, "cpu.stat")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseKeyed(strings.NewReader(s))
		if err == nil && m == nil {
			t.Fatal("nil map without error")
		}
	})
}

func FuzzParseLimits(f *testing.F) {
	slowlabtest.SeedFiles(f, "cpu.max", "memory.max", "memory.*_in_bytes", "memory.current", "memory.peak", "cpuacct.usage", "cpu.cfs_*_us")
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := parseCPUMax(strings.NewReader(s)); err == nil && (m.period == 0 || m.unlimited && m.quota != 0) {
			t.Fatalf("parseCPUMax(%q) = %+v", s, m)
		}
		if l, err := parseMax(strings.NewReader(s)); err == nil && l.unlimited && l.value != 0 {
			t.Fatalf("parseMax(%q) = %+v", s, l)
		}
		_, _ = parseUint(strings.NewReader(s))
		_, _ = parseInt(strings.NewReader(s))
	})
}

func FuzzParsePids(f *testing.F) {
	slowlabtest.SeedFiles(f, "cgroup.procs")
	f.Add("1\n2\n")
	f.Fuzz(func(t *testing.T, s string) {
		pids, err := ParsePids(strings.NewReader(s))
		for _, p := range pids {
			if err == nil && p < 1 {
				t.Fatalf("pid %d accepted", p)
			}
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	f.Add("0::/\n")
	f.Add("4:cpu,cpuacct:/slowlab/run/loadgen\n1:name=systemd:/init.scope\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseProcCgroup(strings.NewReader(s))
		if err == nil && m == nil {
			t.Fatal("nil map without error")
		}
	})
}

func TestReadOOMKills(t *testing.T) {
	write := func(dir, name, body string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	v1 := write(t.TempDir(), "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	v2 := write(t.TempDir(), "memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n")
	old := write(t.TempDir(), "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n") // before Linux 4.13
	for _, tc := range []struct {
		dir  string
		want int
		err  error
	}{{v1, 3, nil}, {v2, 2, nil}, {old, 0, ErrNoOOMCount}, {t.TempDir(), 0, ErrNoOOMCount}} {
		n, err := ReadOOMKills(tc.dir)
		if n != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: %d, %v; want %d, %v", tc.dir, n, err, tc.want, tc.err)
		}
	}
	if _, err := ReadOOMKills(write(t.TempDir(), "memory.events", "oom_kill x\n")); err == nil {
		t.Error("a malformed count was accepted")
	}
}
