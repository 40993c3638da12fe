package lab_test

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// kindFlags returns every registered experiment's own flags whose value
// type's name ends in suffix (case-insensitive), by "experiment --flag".
func kindFlags(t *testing.T, suffix string) map[string]flag.Value {
	t.Helper()
	out := map[string]flag.Value{}
	for _, e := range lab.Experiments() {
		fs := flag.NewFlagSet(e.Name, flag.ContinueOnError)
		e.New().Flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if strings.HasSuffix(strings.ToLower(fmt.Sprintf("%T", f.Value)), suffix) {
				out[e.Name+" --"+f.Name] = f.Value
			}
		})
	}
	return out
}

// TestDurationFlagsAgree: every experiment's duration flag takes the same
// syntax (a Go duration or a number of seconds) and refuses a bad value
// with the same error.
func TestDurationFlagsAgree(t *testing.T) {
	flags := kindFlags(t, "durationflag")
	if len(flags) < 8 {
		t.Fatalf("%d duration flags among the experiments (%v), want at least 8", len(flags), flags)
	}
	const want = `"fast": want a duration such as 250ms or 20s, or a number of seconds`
	for name, v := range flags {
		if err := v.Set("fast"); err == nil || err.Error() != want {
			t.Errorf("%s fast: error %v, want %s", name, err, want)
		}
		for in, out := range map[string]string{"1.5": "1.5s", "250ms": "250ms", "0": "0s", "2m": "2m0s"} {
			if err := v.Set(in); err != nil || v.String() != out {
				t.Errorf("%s %s: %q, %v; want %s", name, in, v.String(), err, out)
			}
		}
	}
}

// TestSizeFlagsAgree: every experiment's size flag takes NGINX's size
// syntax and refuses a bad value with the same error.
func TestSizeFlagsAgree(t *testing.T) {
	flags := kindFlags(t, "sizeflag")
	if len(flags) < 4 {
		t.Fatalf("%d size flags among the experiments (%v), want at least 4", len(flags), flags)
	}
	for name, v := range flags {
		err := v.Set("16q")
		if err == nil || !strings.HasPrefix(err.Error(), `"16q": want a whole number of bytes`) {
			t.Errorf("%s 16q: error %v", name, err)
		}
		if err := v.Set("512k"); err != nil || v.String() != "512k" {
			t.Errorf("%s 512k: %q, %v", name, v.String(), err)
		}
	}
}

// A NamesFlag replaces its default with the names given, kept as given
// (spaces around a comma trimmed) in the field's own type, and refuses an
// empty name or one given twice as every list flag does.
func TestNamesFlag(t *testing.T) {
	routes := []stack.Route{stack.RouteDirect}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(lab.NamesFlag(&routes), "routes", "")
	if err := fs.Parse([]string{"--routes", "proxy-buffering-on, no-such-route"}); err != nil {
		t.Fatal(err)
	}
	if want := []stack.Route{stack.RouteBufferingOn, "no-such-route"}; !slices.Equal(routes, want) {
		t.Errorf("got %q, want %q", routes, want)
	}
	for in, want := range map[string]string{"a,,b": `"a,,b": an empty value`, "a,b,a": `"a,b,a": a given twice`} {
		if err := lab.NamesFlag(&routes).Set(in); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", in, err, want)
		}
	}
}
