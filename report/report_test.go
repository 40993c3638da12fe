package report_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// TestFigureLabels: Check wants every panel's title and axis labels
// (each experiment's report tests run it through labtest.Report), and
// refuses a figure whose panel lacks one.
func TestFigureLabels(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	rep, err := report.Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Fatal(err)
	}
	panels := 0
	for _, f := range rep.Figures {
		panels += len(f.Axes)
		if len(f.Axes) != f.Panels {
			t.Errorf("%s: %d axes for %d panels", f.Name, len(f.Axes), f.Panels)
		}
	}
	if panels != 3 {
		t.Fatalf("%d panels labelled, want 3 (the stand-in's figures)", panels)
	}
	rep.Figures[1].Axes[1].Y = ""
	if err := reporttest.Check(rep); err == nil || !strings.Contains(err.Error(), "stand-in-panels panel 1") {
		t.Errorf("Check with a panel's y label gone: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	valid := func(t *testing.T) string {
		dir := t.TempDir()
		writeResults(t, dir)
		return dir
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
			[]string{"no results files: none of " + strings.Join(allMarkers(), ", ") + " is present"}, report.ErrNoResults},
		{"environment.json", func(t *testing.T) string {
			dir := valid(t)
			os.WriteFile(filepath.Join(dir, "environment.json"), []byte(`{"cpus": "four"}`), 0o644)
			return dir
		}, []string{"environment.json", "cpus"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			rep, err := report.Write(dir, allSections)
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

// A Section that is not one of report's (a zero one) is an error naming
// it, not a panic.
func TestWriteForeignSection(t *testing.T) {
	dir := t.TempDir()
	if _, err := report.Write(dir, []report.Section{standIn, {Name: "stub"}}); err == nil || !strings.Contains(err.Error(), `report section "stub": not one of report's sections`) {
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
