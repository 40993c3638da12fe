package report

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// TestFigureLabels checks that every panel of every figure has a title and
// axis labels, and that value axes name their unit.
func TestFigureLabels(t *testing.T) {
	dir := t.TempDir()
	writeLongPollAndGap(t, dir)
	var figs []*figure
	for _, build := range []func(string) (*section, error){buildLongPoll, buildLatencyGap} {
		s, err := build(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range s.blocks {
			if b.figure != nil {
				figs = append(figs, b.figure)
			}
		}
	}
	if len(figs) != 2 {
		t.Fatalf("%d figures, want 2", len(figs))
	}
	units := []string{"(ms", "(s)", "MiB", "cores"}
	for _, f := range figs {
		for i, p := range f.panels {
			x, y := p.X.Label.Text, p.Y.Label.Text
			if p.Title.Text == "" || x == "" || y == "" {
				t.Errorf("%s panel %d: title %q, x %q, y %q", f.name, i, p.Title.Text, x, y)
			}
			if !slices.ContainsFunc(units, func(u string) bool { return strings.Contains(x+" "+y, u) }) {
				t.Errorf("%s panel %d: no unit in axis labels %q, %q", f.name, i, x, y)
			}
		}
	}
}

func TestWriteErrors(t *testing.T) {
	valid := func(t *testing.T) string {
		dir := t.TempDir()
		writeResults(t, dir)
		return dir
	}
	replace := func(t *testing.T, dir, name, old, new string) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s has no %q", name, old)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T) string
		want   []string
		target error
	}{
		{"missing directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			[]string{"results directory", "no such file"}, fs.ErrNotExist},
		{"file, not directory", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "f")
			os.WriteFile(p, nil, 0o644)
			return p
		}, []string{"not a directory"}, nil},
		{"no results", func(t *testing.T) string { return t.TempDir() },
			[]string{"no results files: none of " + strings.Join(allMarkers(), ", ") + " is present"}, ErrNoResults},
		{"environment.json", func(t *testing.T) string {
			dir := valid(t)
			os.WriteFile(filepath.Join(dir, "environment.json"), []byte(`{"cpus": "four"}`), 0o644)
			return dir
		}, []string{"environment.json", "cpus"}, nil},
		{"groups.csv header", func(t *testing.T) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, groupsFile), []byte("run_id,server,hold\nr1,sync-2,2\n"), 0o644)
			return dir
		}, []string{"groups.csv", `column 4 "probe_concurrency" is missing`}, recorder.ErrHeader},
		{"gap.csv cell", func(t *testing.T) string {
			dir := t.TempDir()
			writeLongPollAndGap(t, dir)
			replace(t, dir, gapFile, "0.05", "fast")
			return dir
		}, []string{"gap.csv", `line 2, column 4 (server_ms): "fast": want a finite decimal number`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			rep, err := Write(dir, allSections)
			if err == nil {
				t.Fatalf("Write = %+v, want an error", rep)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error has more than one line: %q", msg)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %v is not %v", err, tt.target)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
				t.Error("report.html written despite the error")
			}
		})
	}
}

func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var ls []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
		}
		return ls
	}
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{1.2, 4, []string{"2"}},
		{0.8, 4, []string{"1", "2"}},
		{1, 1000, []string{"1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"}},
		{1, 30000, []string{"1", "10", "100", "1000", "10000"}},
		{0.05, 0.3, []string{"0.05", "0.1", "0.2"}},
	} {
		if got := labels(tt.lo, tt.hi); !slices.Equal(got, tt.want) {
			t.Errorf("logTicks(%v, %v) labels %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := (logTicks{}).Ticks(0, 10); got != nil {
		t.Errorf("logTicks(0, 10) = %v, want none", got)
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 9.6, []string{"0", "2", "4", "6", "8"}},
		{0, 66, []string{"0", "20", "40", "60"}},
		{0, 0.23, []string{"0", "0.05", "0.1", "0.15", "0.2"}},
		{-0.6, 6.4, []string{"0", "2", "4", "6"}},
	} {
		var got []string
		for _, tk := range (linearTicks{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("linearTicks(%v, %v) labels %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
}

// A Section that is not one of report's (a zero one) is an error naming
// it, not a panic.
func TestWriteForeignSection(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(dir, []Section{standIn, {Name: "stub"}}); err == nil || !strings.Contains(err.Error(), `report section "stub": not one of report's sections`) {
		t.Errorf("Write with a zero section: %v", err)
	}
}

// allMarkers are allSections' markers, each once, in order.
func allMarkers() []string {
	var m []string
	for _, s := range allSections {
		if !slices.Contains(m, s.Marker) {
			m = append(m, s.Marker)
		}
	}
	return m
}
