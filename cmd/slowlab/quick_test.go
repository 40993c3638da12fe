package main

import (
	"flag"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab"
)

// printed is the configuration `slowlab reproduce NAME ARGS
// --print-scenario` prints, read back; ok is false when the command
// refused the arguments (stderr says why).
func printed(t *testing.T, name string, args ...string) (cfg lab.Config, stderr string, ok bool) {
	t.Helper()
	code, stdout, stderr := runCmd(t, append(append([]string{"reproduce", name}, args...), "--print-scenario")...)
	if code != 0 {
		return nil, stderr, false
	}
	cfg, err := lab.ParseScenario([]byte(stdout))
	if err != nil {
		t.Fatalf("%s %v: printed scenario does not read back: %v\n%s", name, args, err, stdout)
	}
	return cfg, "", true
}

// TestQuickKeepsGivenFlags: a flag the user gives always wins over
// --quick. For every registered experiment that takes --quick, the fields
// --quick changes are found by diffing its printed scenario with and
// without --quick; for each, every flag that sets it (found by trying each
// of the experiment's flags) is given a value other than the published
// and the reduced one, and the field must be the same with --quick as
// without. Fields no flag sets (conditions) are the scenario file's, which
// lab's TestQuickKeepsScenarioFields covers.
func TestQuickKeepsGivenFlags(t *testing.T) {
	checked := map[string]bool{} // experiment --flag
	for _, e := range lab.Experiments() {
		if !e.Takes("quick") {
			continue
		}
		pub, stderr, ok := printed(t, e.Name)
		if !ok {
			t.Fatalf("%s: %s", e.Name, stderr)
		}
		quick, stderr, ok := printed(t, e.Name, "--quick")
		if !ok {
			t.Fatalf("%s --quick: %s", e.Name, stderr)
		}
		fs := flag.NewFlagSet(e.Name, flag.ContinueOnError)
		var o lab.Options
		o.AddFlags(fs, e.Shared)
		e.New().Flags(fs)
		for _, f := range labtest.Fields(pub) {
			changed := !reflect.DeepEqual(f.Of(pub).Interface(), f.Of(quick).Interface())
			if !changed && f.Of(pub).Kind() != reflect.Slice {
				continue // lists too: a reduction may shorten one longer than the published
			}
			values := candidates(f.Of(pub), f.Of(quick))
			if len(values) == 0 {
				if changed {
					t.Logf("%s: --quick changes %s, which no flag can set to a value this test writes", e.Name, f.Name())
				}
				continue
			}
			set := false
			fs.VisitAll(func(fl *flag.Flag) {
				if fl.Name != "quick" && checkFlag(t, e.Name, fl.Name, f, pub, quick, values) {
					checked[e.Name+" --"+fl.Name], set = true, true
				}
			})
			if changed && !set {
				t.Logf("%s: --quick changes %s, which no flag sets", e.Name, f.Name())
			}
		}
	}
	names := slices.Sorted(maps.Keys(checked))
	t.Logf("checked: %s", strings.Join(names, "; "))
	// The overrides the issue reported are among those checked.
	for _, want := range []string{"temp-cliff --read-rate", "stalled-reader --stall", "idle-connections --connections",
		"idle-connections --hold", "sse --reps", "latency-gap --delay"} {
		if !checked[want] {
			t.Errorf("%s was not checked", want)
		}
	}
}

// checkFlag tries name with each value: if one sets field f, the field
// must be what it is without --quick; it reports whether name sets f.
func checkFlag(t *testing.T, exp, name string, f labtest.Field, pub, quick lab.Config, values []string) bool {
	t.Helper()
	sets, refused := false, ""
	for _, v := range values {
		arg := "--" + name + "=" + v
		plain, _, ok := printed(t, exp, arg)
		if !ok || reflect.DeepEqual(f.Of(plain).Interface(), f.Of(pub).Interface()) {
			continue // not this flag's field, or not a value it takes
		}
		sets = true
		got, stderr, ok := printed(t, exp, arg, "--quick")
		if !ok { // valid alone but not beside --quick's other values
			refused = stderr
			continue
		}
		want := f.Of(plain).Interface()
		if g := f.Of(got).Interface(); !reflect.DeepEqual(g, want) {
			t.Errorf("%s %s --quick: %s is %v, want %v as given (--quick's own is %v)", exp, arg, f.Name(), g, want, f.Of(quick).Interface())
		}
		return true
	}
	if sets {
		t.Errorf("%s --%s sets %s but every value tried is refused beside --quick: %s", exp, name, f.Name(), refused)
	}
	return sets
}

// candidates are flag values for a field whose published value is pub
// and --quick's is quick, each other than both: numbers and durations
// between and around them, and lists of three such.
func candidates(pub, quick reflect.Value) []string {
	isDur := func(t reflect.Type) bool { return t.Kind() == reflect.Int64 && strings.HasSuffix(t.Name(), "Duration") }
	switch pub.Kind() {
	case reflect.Int, reflect.Int64:
		return scalars(pub.Int(), quick.Int(), isDur(pub.Type()))
	case reflect.Float64:
		var out []string
		for _, x := range []float64{(pub.Float() + quick.Float()) / 2, pub.Float() + 0.5, quick.Float() + 0.25} {
			if x != pub.Float() && x != quick.Float() {
				out = append(out, strconv.FormatFloat(x, 'g', -1, 64))
			}
		}
		return out
	case reflect.Slice:
		el := pub.Type().Elem()
		if pub.Len() == 0 || (el.Kind() != reflect.Int && el.Kind() != reflect.Int64 && el.Kind() != reflect.Float64) {
			return nil
		}
		// Three values from the published first one up: a list --quick
		// would shorten, and other than either.
		var parts []string
		for i := int64(1); i <= 3; i++ {
			switch {
			case el.Kind() == reflect.Float64:
				parts = append(parts, strconv.FormatFloat(pub.Index(0).Float()+float64(i)/10, 'g', -1, 64))
			case isDur(el):
				parts = append(parts, time.Duration(pub.Index(0).Int()+i*int64(time.Millisecond)).String())
			default:
				parts = append(parts, strconv.FormatInt(pub.Index(0).Int()+i, 10))
			}
		}
		return []string{strings.Join(parts, ",")}
	}
	return nil
}

// scalars are whole numbers (or durations) other than a and b: their
// middle, half the smaller, twice the larger, and one unit past each.
func scalars(a, b int64, dur bool) []string {
	unit := int64(1)
	if dur {
		unit = int64(time.Millisecond)
		if a%int64(time.Second) == 0 && b%int64(time.Second) == 0 {
			unit = int64(time.Second)
		}
	}
	round := func(x int64) int64 { return x / unit * unit }
	var out []string
	for _, x := range []int64{round((a + b) / 2), round(min(a, b) / 2), 2 * max(a, b), a + unit, b + unit} {
		s := strconv.FormatInt(x, 10)
		if dur {
			s = time.Duration(x).String()
		}
		if x > 0 && x != a && x != b && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// The commands issue 35 reported run with the values given: each prints
// the scenario it would run.
func TestQuickIssueCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // lines of the printed scenario
	}{
		{[]string{"temp-cliff", "--read-rate", "1m"}, []string{"  read_rate: 1m"}},
		{[]string{"stalled-reader", "--stall", "30s"}, []string{"  stall: 30s", "  give_up: 1m0s"}},
		{[]string{"idle-connections", "--connections", "100", "--hold", "60s"}, []string{"connections:\n  - 100", "hold: 1m0s"}},
		{[]string{"sse", "--reps", "2"}, []string{"reps: 2"}},
	} {
		args := append([]string{"reproduce"}, append(tc.args, "--quick", "--print-scenario")...)
		code, stdout, stderr := runCmd(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w+"\n") {
				t.Errorf("%v: printed scenario lacks %q:\n%s", args, w, stdout)
			}
		}
	}
}
