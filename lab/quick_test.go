package lab_test

import (
	"reflect"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
)

// TestQuickKeepsScenarioFields: a field a scenario file sets wins over
// --quick (`slowlab run FILE --quick`), but reps: --quick is one
// repetition, as --reps 1 would be. For every registered experiment that
// takes --quick and every field its reduction changes (found by diffing
// the published configuration with --quick's), a file that sets only
// that field, to its published value, keeps it under --quick while every
// other field --quick changes is reduced. (The flags' side is cmd's
// TestQuickKeepsGivenFlags.)
func TestQuickKeepsScenarioFields(t *testing.T) {
	n := 0
	for _, e := range lab.Experiments() {
		if !e.Takes("quick") {
			continue
		}
		pub, quick := e.New(), e.New()
		if err := (lab.Options{Quick: true}).Apply(quick, lab.Given{}); err != nil {
			t.Fatal(err)
		}
		changed := labtest.Changed(pub, quick)
		for _, f := range changed {
			if f.Name() == "reps" {
				continue
			}
			b := scenarioSetting(t, e.Name, f.YAML, f.Of(pub).Interface())
			cfg, err := lab.ParseScenario(b)
			if err != nil {
				t.Fatalf("%s: %v\n%s", e.Name, err, b)
			}
			if err := (lab.Options{Quick: true}).Apply(cfg, lab.Given{Scenario: b}); err != nil {
				t.Fatalf("%s: %v", e.Name, err)
			}
			n++
			if got, want := f.Of(cfg).Interface(), f.Of(pub).Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, file sets %s, --quick: %v, want the file's %v", e.Name, f.Name(), got, want)
			}
			if r := *cfg.(lab.Repeated).Repetitions(); r != 1 {
				t.Errorf("%s, file sets %s, --quick: reps %d, want 1", e.Name, f.Name(), r)
			}
			for _, g := range changed {
				if g.Name() == f.Name() {
					continue
				}
				if got, want := g.Of(cfg).Interface(), g.Of(quick).Interface(); !reflect.DeepEqual(got, want) {
					t.Errorf("%s, file sets %s, --quick: %s %v, want --quick's %v", e.Name, f.Name(), g.Name(), got, want)
				}
			}
		}
	}
	t.Logf("%d fields checked", n)
	if n < 5 {
		t.Errorf("%d fields checked: the reductions changed almost nothing", n)
	}
}

// scenarioSetting is a scenario of experiment exp that sets only the
// field at path to v.
func scenarioSetting(t *testing.T, exp string, path []string, v any) []byte {
	t.Helper()
	doc := map[string]any{"experiment": exp}
	m := doc
	for _, k := range path[:len(path)-1] {
		next := map[string]any{}
		m[k] = next
		m = next
	}
	m[path[len(path)-1]] = v
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(path, "experiment") {
		t.Fatalf("%s: %v", exp, path)
	}
	return b
}
