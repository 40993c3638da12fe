package lab_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
	"github.com/slowlab/slowlab/lab/slowclient"
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
