package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/sse"
	"github.com/slowlab/slowlab/recorder"
)

// Each registered experiment carries its own report section, and no two
// share a place in the order (which lab.Register refuses).
func TestRegistryCarriesReportSections(t *testing.T) {
	orders := map[int]string{}
	for _, e := range lab.Experiments() {
		if e.Report.Name != e.Name || e.Report.Marker == "" {
			t.Errorf("%s carries report section %q (marker %q): want its own", e.Name, e.Report.Name, e.Report.Marker)
		}
		if o, ok := orders[e.Order]; ok {
			t.Errorf("%s and %s share order %d", o, e.Name, e.Order)
		}
		orders[e.Order] = e.Name
	}
}

// `slowlab report` draws the sections in the registry's order: a
// directory holding sse's and temp-cliff's results files (temp-disk-full
// shares temp-cliff's) lists them as `slowlab reproduce` does.
func TestReportOrderIsRegistryOrder(t *testing.T) {
	dir := t.TempDir()
	w, err := recorder.CreateFile[sse.RunRow](dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../lab/tempcliff/testdata/quick/temp-runs.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "temp-runs.csv"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "report", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := sections(t, dir)
	want := slices.DeleteFunc(lab.Names(), func(n string) bool { return !slices.Contains([]string{"sse", "temp-cliff", "temp-disk-full"}, n) })
	if !slices.Equal(got, want) {
		t.Errorf("report sections %v, want the registry's order %v", got, want)
	}
}
