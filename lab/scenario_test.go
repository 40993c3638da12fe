package lab

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every testdata/scenarios/invalid-*.yml starts with "# error: MESSAGE",
// the exact error LoadScenario must give (after the file name).
func TestInvalidScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/invalid-*.yml")
	if len(files) < 12 {
		t.Fatalf("%d invalid scenarios, want at least 12", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, _ := os.ReadFile(f)
			first, _, _ := strings.Cut(string(b), "\n")
			want, ok := strings.CutPrefix(first, "# error: ")
			if !ok {
				t.Fatalf("first line %q is not '# error: ...'", first)
			}
			_, err := LoadScenario(f)
			if err == nil || err.Error() != f+": "+want {
				t.Errorf("got  %v\nwant %s: %s", err, f, want)
			}
		})
	}
}

func TestValidScenario(t *testing.T) {
	s, err := LoadScenario("testdata/scenarios/valid-own-workers.yml")
	if err != nil {
		t.Fatal(err)
	}
	e := s.SlowClient()
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(e.Runs()) != 4 || e.Conditions[0].Server.Workers != 4 || e.LargeSize != 8<<20 || e.ReadRate != 1<<20 || e.FastRate != 10 {
		t.Errorf("scenario decoded to %+v", e)
	}
	// Fields left out keep the published values.
	if d := DefaultSlowClient(); e.FastOffset != d.FastOffset || e.RcvBuf != d.RcvBuf || e.ReadSize != d.ReadSize {
		t.Errorf("defaults lost: %+v", e)
	}
}

// The preset printed as a scenario runs the same matrix.
func TestPresetRoundTrip(t *testing.T) {
	d := DefaultScenario()
	b, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseScenario(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(got.SlowClient(), DefaultSlowClient()) {
		t.Errorf("round trip changed the experiment:\n%s", b)
	}
	if !reflect.DeepEqual(got.CgroupLimits(), DefaultLimits()) {
		t.Errorf("round trip changed the limits: %v", got.CgroupLimits())
	}
	for _, want := range []string{"experiment: slow-client", "duration: 9s", "size: 16m", "read_rate: 2m", "server: gthread-1x4"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("printed scenario lacks %q:\n%s", want, b)
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
		s, err := ParseScenario(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		if err := s.SlowClient().Validate(); err != nil {
			t.Errorf("accepted scenario fails experiment validation: %v", err)
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseScenario(out)
		if err != nil || !reflect.DeepEqual(again.SlowClient(), s.SlowClient()) {
			t.Errorf("re-parse of marshalled scenario: %v\n%s", err, out)
		}
	})
}
