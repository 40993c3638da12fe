package labtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// Report copies files (names under testdata) into a fresh results
// directory, writes its report with section alone, and checks it with
// reporttest.Check and that the section drew: what an experiment's report
// test starts from.
func Report(t *testing.T, section report.Section, files ...string) *report.Report {
	t.Helper()
	rep := ReportFrom(t, "testdata", []report.Section{section}, files...)
	if !slices.Equal(rep.Experiments, []string{section.Name}) {
		t.Errorf("experiments %v, want %s", rep.Experiments, section.Name)
	}
	return rep
}

// ReportFrom copies files (names under the folder from) into a fresh
// results directory, writes its report with sections (Write picks those
// whose results are there) and checks it with reporttest.Check.
func ReportFrom(t *testing.T, from string, sections []report.Section, files ...string) *report.Report {
	t.Helper()
	dir := t.TempDir()
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := report.Write(dir, sections)
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	return rep
}

// Figure is rep's figure named name; the test fails without it.
func Figure(t *testing.T, rep *report.Report, name string) report.Figure {
	t.Helper()
	for _, f := range rep.Figures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %q among %v", name, rep.Figures)
	return report.Figure{}
}

// AxesHaveUnits fails t for every panel of rep's figures whose axis
// labels name none of units (such as "(ms", "(s)", "MiB"): a value axis
// says what it measures in. reporttest.Check already wants the labels.
func AxesHaveUnits(t *testing.T, rep *report.Report, units ...string) {
	t.Helper()
	for _, f := range rep.Figures {
		for i, a := range f.Axes {
			if !slices.ContainsFunc(units, func(u string) bool { return strings.Contains(a.X+" "+a.Y, u) }) {
				t.Errorf("figure %s panel %d: axes %q, %q name no unit of %v", f.Name, i, a.X, a.Y, units)
			}
		}
	}
}
