package lab_test

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/schema"
	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/stack"
)

// Every testdata/scenarios/invalid-*.yml starts with "# error: MESSAGE",
// the exact error LoadScenario must give (after the file name).
func TestInvalidScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/invalid-*.yml")
	if len(files) < 15 {
		t.Fatalf("%d invalid scenarios, want at least 15", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, _ := os.ReadFile(f)
			first, _, _ := strings.Cut(string(b), "\n")
			want, ok := strings.CutPrefix(first, "# error: ")
			if !ok {
				t.Fatalf("first line %q is not '# error: ...'", first)
			}
			_, err := lab.LoadScenario(f, nil)
			if err == nil || err.Error() != f+": "+want {
				t.Errorf("got  %v\nwant %s: %s", err, f, want)
			}
		})
	}
}

func TestValidScenario(t *testing.T) {
	cfg, err := lab.LoadScenario("testdata/scenarios/valid-own-workers.yml", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*slowclient.Config)
	if len(c.Runs()) != 4 || c.Conditions[0].Server != "sync-4" || c.Large.Size != 8<<20 || c.SlowReader.ReadRate != 1<<20 || c.Fast.Rate != 10 {
		t.Errorf("scenario decoded to %+v", c)
	}
	// Fields left out keep the published values.
	if d := slowclient.Published(); c.Fast.Offset != d.Fast.Offset || c.SlowReader.RcvBuf != d.SlowReader.RcvBuf || c.SlowReader.ReadSize != d.SlowReader.ReadSize {
		t.Errorf("defaults lost: %+v", c)
	}
}

// Every registered experiment's published configuration, printed as a
// scenario, reads back as the same configuration, and "-" reads standard
// input.
func TestPrintedScenariosRoundTrip(t *testing.T) {
	for _, e := range lab.Experiments() {
		cfg := e.New()
		b, err := lab.MarshalScenario(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lab.LoadScenario("-", strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if !reflect.DeepEqual(got, cfg) {
			t.Errorf("%s: round trip changed the experiment:\n%s\n got %+v\nwant %+v", cfg.Head().Experiment, b, got, cfg)
		}
	}
	b, _ := lab.MarshalScenario(slowclient.Published())
	for _, want := range []string{"experiment: slow-client", "duration: 9s", "size: 16m", "read_rate: 2m", "server: gthread-1x4", "cpu: 0.25"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("printed scenario lacks %q:\n%s", want, b)
		}
	}
}

// The shipped examples load and validate completely.
func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) < 2 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		if _, err := lab.LoadScenario(f, nil); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/scenarios/*.yml")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	defer schema.SetNotes(io.Discard)()
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := lab.ParseScenario(b)
		if err != nil {
			if err.Error() == "" || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one non-empty line", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted scenario does not validate: %v", err)
		}
	})
}

// A scenario says schema_version, first, when slowlab writes it; one a
// user writes without it is 1.0. An unknown field is refused at 1.0 (a
// typo), ignored with a note at a newer minor version; a newer major
// version is refused by name. The version is no setting: the config read
// holds none, and a resume of a results directory whose scenario.yaml an
// older slowlab wrote (without it) finds no difference.
func TestScenarioVersions(t *testing.T) {
	b, err := lab.MarshalScenario(slowclient.Published())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "schema_version: \"1.0\"\nexperiment: slow-client\n") {
		t.Fatalf("printed scenario:\n%.100s", b)
	}
	var notes strings.Builder
	defer schema.SetNotes(&notes)()
	dir := t.TempDir()
	path := filepath.Join(dir, lab.ScenarioFile)
	load := func(scenario string) (lab.Config, error) {
		t.Helper()
		if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		return lab.LoadScenario(path, nil)
	}
	old := strings.TrimPrefix(string(b), "schema_version: \"1.0\"\n")
	for _, c := range []struct{ name, scenario, err string }{
		{"none", old, ""},
		{"1.0", string(b), ""},
		{"1.0 unquoted", "schema_version: 1.0\n" + old, ""},
		{"a typo at 1.0", string(b) + "slow_clients: 2\n", "field slow_clients not found in type slowclient.Config"},
		{"a typo without a version", old + "slow_clients: 2\n", "field slow_clients not found in type slowclient.Config"},
		{"1.2 with a field", strings.Replace(string(b), `"1.0"`, `"1.2"`, 1) + "warmup: 2s\n", ""},
		{"2.0", strings.Replace(string(b), `"1.0"`, `"2.0"`, 1), path + ": schema 2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab"},
		{"not a version", strings.Replace(string(b), `"1.0"`, `"one"`, 1), path + `: schema_version "one": want MAJOR.MINOR, such as 1.0`},
	} {
		cfg, err := load(c.scenario)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
			continue
		}
		if err == nil && !reflect.DeepEqual(cfg, slowclient.Published()) {
			t.Errorf("%s: read %+v, want the published config", c.name, cfg)
		}
	}
	if want := path + ": schema 1.2 is newer than this slowlab's 1.0; fields it does not know were ignored\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}

	for _, c := range []struct{ name, was, err string }{
		{"older, without a version", old, ""},
		{"1.1 with a field", strings.Replace(string(b), `"1.0"`, `"1.1"`, 1) + "warmup: 2s\n", "it was run with other settings: warmup: 2s -> (none)"},
		{"2.0", strings.Replace(string(b), `"1.0"`, `"2.0"`, 1), "scenario.yaml: schema 2.0: this slowlab ("},
	} {
		if err := os.WriteFile(path, []byte(c.was), 0o644); err != nil {
			t.Fatal(err)
		}
		err := lab.CheckResume(&lab.Env{Out: dir, Resume: true}, slowclient.Published())
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("resume, %s: %v, want %q", c.name, err, c.err)
		}
	}
}

// TestStackSpecNamesFirstBadLimit: with limits for three unknown
// components, Validate names the first in sorted order, whatever the
// map's.
func TestStackSpecNamesFirstBadLimit(t *testing.T) {
	s := lab.StackSpec{Stack: stack.NameAuto, Limits: map[string]lab.LimitSpec{"zz": {}, "db": {}, "mm": {}, "app": {CPU: 1}}}
	for range 20 {
		if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), "limits.db: allowed components") {
			t.Fatalf("limits for three unknown components: %v, want db named", err)
		}
	}
}
