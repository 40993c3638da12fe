package cgroup

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtures are the exporter's fixture trees: a v1 machine with cpu and
// cpuacct co-mounted (and "cpu", "cpuacct" symlinks to it), a v2 one, and
// a hybrid one; each holds slowlab/{app,proxy,loadgen}.
const fixtures = "../exporter/testdata/fixtures"

func TestDetectFixtures(t *testing.T) {
	tests := []struct {
		root        string
		mode        Mode
		cpu, memory string // directory of slowlab/app for the controller
		v1          bool
	}{
		{root: "cgroup-v1", mode: V1, cpu: "cpu,cpuacct/slowlab/app", memory: "memory/slowlab/app", v1: true},
		{root: "cgroup-v2", mode: V2, cpu: "slowlab/app", memory: "slowlab/app"},
		{root: "cgroup-hybrid", mode: Hybrid, cpu: "cpu/slowlab/app", memory: "memory/slowlab/app", v1: true},
	}
	for _, tt := range tests {
		root := filepath.Join(fixtures, tt.root)
		l, err := Detect(root)
		if err != nil {
			t.Fatalf("%s: %v", tt.root, err)
		}
		if l.Mode != tt.mode {
			t.Errorf("%s: mode %s, want %s", tt.root, l.Mode, tt.mode)
		}
		for ctrl, want := range map[string]string{"cpu": tt.cpu, "memory": tt.memory} {
			dir, v1 := l.Dir(ctrl, "slowlab/app")
			if dir != filepath.Join(root, want) || v1 != tt.v1 {
				t.Errorf("%s: Dir(%s) = %s, %t; want %s, %t", tt.root, ctrl, dir, v1, filepath.Join(root, want), tt.v1)
			}
		}
	}
	if _, err := Detect(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing root: no error")
	}
}

// Read gives the same figures on v1 and v2 for the same cgroup state.
func TestReadFixtures(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	want := Stats{CPUSeconds: f(12.5), Periods: f(4200), ThrottledPeriods: f(1300), ThrottledSeconds: f(3.75), LimitCores: f(0.25),
		MemoryBytes: f(41943040), MemoryPeakBytes: f(60817408), MemoryLimitBytes: f(134217728), OOMKills: f(2)}
	for _, tree := range []string{"cgroup-v1", "cgroup-v2"} {
		l, err := Detect(filepath.Join(fixtures, tree))
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Read("slowlab/app")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Read = %s, %v; want %s", tree, show(got), err, show(want))
		}
		pids := map[int]bool{}
		if err := l.AddPids("slowlab", pids); err != nil || len(pids) == 0 {
			t.Errorf("%s: AddPids(slowlab) = %v, %v; want the processes of its three children", tree, pids, err)
		}
	}
	l, _ := Detect(filepath.Join(fixtures, "cgroup-v2"))
	if _, err := l.Read("slowlab/nope"); err == nil || !strings.Contains(err.Error(), "read cpu.stat") {
		t.Errorf("missing cgroup: %v", err)
	}
}

func show(s Stats) string {
	var parts []string
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if p := v.Field(i).Interface().(*float64); p != nil {
			parts = append(parts, fmt.Sprintf("%s=%g", v.Type().Field(i).Name, *p))
		}
	}
	return strings.Join(parts, " ")
}
