package lab_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// TestSlowReaderRulesAgree: every registered experiment whose scenario
// has a slow_reader: block refuses the same bad values with the same
// error, naming the field by its YAML path: one rule set, loadgen's.
func TestSlowReaderRulesAgree(t *testing.T) {
	var names []string
	for _, e := range lab.Experiments() {
		b, err := lab.MarshalScenario(e.New())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nslow_reader:\n") {
			names = append(names, e.Name)
		}
	}
	if len(names) < 2 {
		t.Fatalf("experiments with slow_reader: %v, want at least slow-client and temp-cliff", names)
	}
	for _, tc := range []struct{ field, value, want string }{
		{"read_rate", "0", "slow_reader.read_rate 0: allowed 1k to 1g bytes/s"},
		{"read_rate", "512", "slow_reader.read_rate 512: allowed 1k to 1g bytes/s"},
		{"read_rate", "2g", "slow_reader.read_rate 2g: allowed 1k to 1g bytes/s"},
		{"rcvbuf", "65m", "slow_reader.rcvbuf 65m: allowed 0 (the kernel's) to 64m"},
		{"read_size", "0", "slow_reader.read_size 0: allowed 1 byte to 16m"},
		{"read_size", "17m", "slow_reader.read_size 17m: allowed 1 byte to 16m"},
		{"timeout", "0s", "slow_reader.timeout 0s: allowed more than 0 up to 1h"},
		{"timeout", "-1s", "slow_reader.timeout -1s: allowed more than 0 up to 1h"},
		{"timeout", "2h", "slow_reader.timeout 2h0m0s: allowed up to 1h"},
	} {
		for _, name := range names {
			b := fmt.Sprintf("experiment: %s\nslow_reader:\n  %s: %s\n", name, tc.field, tc.value)
			if _, err := lab.ParseScenario([]byte(b)); err == nil || err.Error() != tc.want {
				t.Errorf("%s, slow_reader.%s %s: error %v, want %s", name, tc.field, tc.value, err, tc.want)
			}
		}
	}
}

// TestSlowReaderSpecValid: the published readers pass, and the spec is
// what loadgen gets.
func TestSlowReaderSpecValid(t *testing.T) {
	s := lab.PublishedSlowReader(4 << 20)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	r := s.Reader()
	if r.Rate != 4<<20 || r.RcvBuf != 8<<10 || r.ReadSize != 16<<10 || r.Timeout.Minutes() != 2 {
		t.Errorf("Reader() = %+v", r)
	}
}
