package main

import (
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
)

// TestListFlagsRefuseDuplicates: every list flag of every experiment
// refuses a value given twice, naming the flag and the value (a list
// runs each value once: --loss 1,1 ran one condition twice while --tls
// 1.3,1.3 was refused). Each list field of the printed scenario gives a
// value (its first, or a value other than the published when the list
// has one); every flag of the experiment is given that value twice, and
// one that takes it must refuse it.
func TestListFlagsRefuseDuplicates(t *testing.T) {
	refused := map[string]bool{}
	for _, e := range lab.Experiments() {
		pub, stderr, ok := printed(t, e.Name)
		if !ok {
			t.Fatalf("%s: %s", e.Name, stderr)
		}
		fs := flag.NewFlagSet(e.Name, flag.ContinueOnError)
		e.New().Flags(fs)
		for _, f := range labtest.Fields(pub) {
			v := f.Of(pub)
			if v.Kind() != reflect.Slice || v.Len() == 0 {
				continue
			}
			x, ok := listValue(v)
			if !ok {
				continue
			}
			fs.VisitAll(func(fl *flag.Flag) {
				arg := "--" + fl.Name + "=" + x + "," + x
				got, stderr, ok := printed(t, e.Name, arg)
				want := fmt.Sprintf("slowlab reproduce: invalid value %q for flag -%s: %q: %s given twice", x+","+x, fl.Name, x+","+x, x)
				switch {
				case ok && f.Of(got).Len() == 2 && reflect.DeepEqual(f.Of(got).Index(0).Interface(), f.Of(got).Index(1).Interface()):
					t.Errorf("%s %s: ran, %s %v", e.Name, arg, f.Name(), f.Of(got).Interface())
				case strings.Contains(stderr, "given twice"):
					refused[e.Name+" --"+fl.Name] = true
					if !strings.HasPrefix(stderr, want) {
						t.Errorf("%s %s: %q, want %q...", e.Name, arg, stderr, want)
					}
				}
			})
		}
	}
	t.Logf("refused: %v", refused)
	for _, want := range []string{"latency-gap --loss", "latency-gap --tls", "latency-gap --delay", "latency-gap --sizes",
		"idle-connections --connections", "idle-connections --servers", "buffer-sweep --sizes"} {
		if !refused[want] {
			t.Errorf("%s was not given a value twice", want)
		}
	}
}

// listValue is one value of list v as a flag writes it: its first, or,
// for a one-value list of numbers, another (so that giving it shows).
func listValue(v reflect.Value) (string, bool) {
	el := v.Index(0)
	if s, ok := el.Interface().(fmt.Stringer); ok {
		return s.String(), true
	}
	switch el.Kind() {
	case reflect.String:
		return el.String(), true
	case reflect.Float64:
		return strconv.FormatFloat(el.Float()+0.5, 'g', -1, 64), true
	case reflect.Int, reflect.Int64:
		if strings.HasSuffix(el.Type().Name(), "Duration") {
			return time.Duration(el.Int() + int64(time.Millisecond)).String(), true
		}
		return strconv.FormatInt(el.Int()+1, 10), true
	}
	return "", false
}

// Values equal once parsed, repeated flags, and flags that change the
// meaning of another are refused, each naming what is wrong; an
// experiment that starts its own stack says so before the external stack
// asks for its external: block.
func TestInconsistentInputRefused(t *testing.T) {
	out := t.TempDir() // where record would write, had it run
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"reproduce", "latency-gap", "--loss", "1,1%"}, `slowlab reproduce: invalid value "1,1%" for flag -loss: "1,1%": 1% given twice (as 1) (see --help)`},
		{[]string{"reproduce", "latency-gap", "--tls", "1.3,1.3"}, `slowlab reproduce: invalid value "1.3,1.3" for flag -tls: "1.3,1.3": 1.3 given twice (see --help)`},
		{[]string{"reproduce", "buffer-sweep", "--sizes", "4m,4096k"}, `slowlab reproduce: invalid value "4m,4096k" for flag -sizes: "4m,4096k": 4096k given twice (as 4m) (see --help)`},
		{[]string{"reproduce", "long-poll", "--condition", "sync-2:0:20", "--condition", "sync-2:0:20"}, `slowlab reproduce: invalid value "sync-2:0:20" for flag -condition: "sync-2:0:20": given twice (see --help)`},
		{[]string{"record", "--scrape", "http://127.0.0.1:1/metrics", "--scrape", "http://127.0.0.1:1/metrics", "--duration", "1ms", "--out", out}, `slowlab record: invalid value "http://127.0.0.1:1/metrics" for flag -scrape: "http://127.0.0.1:1/metrics": given twice (see --help)`},
		{[]string{"reproduce", "idle-connections", "--modes", "idle,,slowloris"}, `slowlab reproduce: invalid value "idle,,slowloris" for flag -modes: "idle,,slowloris": an empty value (see --help)`},
		{[]string{"reproduce", "latency-gap", "--delay-up", "5ms"}, "slowlab reproduce: --delay-up 5ms without --delay-down: give both (0 for none)"},
		{[]string{"reproduce", "latency-gap", "--delay-down", "5ms"}, "slowlab reproduce: --delay-down 5ms without --delay-up: give both (0 for none)"},
		{[]string{"reproduce", "latency-gap", "--delay", "10ms", "--delay-up", "5ms", "--delay-down", "0"}, "slowlab reproduce: --delay with --delay-up/--delay-down: give one"},
		{[]string{"reproduce", "latency-gap", "--dns", "cold,cold"}, `slowlab reproduce: invalid value "cold,cold" for flag -dns: "cold,cold": cold given twice (see --help)`},
		{[]string{"reproduce", "latency-gap", "--dns", "warm"}, `slowlab reproduce: dns[0] "warm": allowed none, cold, cached`},
		{[]string{"reproduce", "latency-gap", "--dns-delay", "20ms"}, "slowlab reproduce: dns_delay 20ms without a dns condition that looks up: give dns cold or cached (--dns cold,cached)"},
		{[]string{"reproduce", "latency-gap", "--dns", "cold", "--dns-delay", "-1ms"}, "slowlab reproduce: dns_delay -1ms: allowed 0 to 5s"},
		{[]string{"reproduce", "latency-gap", "--dns", "cached", "--dns-delay", "6s"}, "slowlab reproduce: dns_delay 6s: allowed 0 to 5s"},
		{[]string{"reproduce", "latency-gap", "--dns", "cold", "--dns-families", "aaaa"}, `slowlab reproduce: dns_families[0] "aaaa": allowed a, a+aaaa, aaaa-blackhole, aaaa-late`},
		{[]string{"reproduce", "latency-gap", "--dns-families", "a+aaaa"}, "slowlab reproduce: dns_families a+aaaa without a dns condition that looks up: give dns cold or cached (--dns cold,cached)"},
		{[]string{"reproduce", "latency-gap", "--dns", "cold", "--dns-families", "aaaa-late"}, "slowlab reproduce: dns_families aaaa-late without dns_aaaa_delay: give how much later AAAA is answered (--dns-aaaa-delay 100ms)"},
		{[]string{"reproduce", "sse", "--stack", "external"}, "slowlab reproduce: stack external: sse starts its own stack"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if args[0] == "reproduce" { // nothing runs, whatever the outcome
				args = append(slices.Clip(args), "--print-scenario")
			}
			code, _, stderr := runCmd(t, args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and one line starting %q", code, stderr, tc.want)
			}
		})
	}
	// Both delays given: one asymmetric path, which the printed scenario shows.
	cfg, stderr, ok := printed(t, "latency-gap", "--delay-up", "5ms", "--delay-down", "0")
	if !ok {
		t.Fatalf("--delay-up 5ms --delay-down 0: %s", stderr)
	}
	if s, _ := lab.MarshalScenario(cfg); !strings.Contains(string(s), "delay_up: 5ms\n") {
		t.Errorf("--delay-up 5ms --delay-down 0 printed:\n%s", s)
	}
}

// Every experiment that refuses stack: external says why before anything
// asks for the external: block; the others ask for it.
func TestExternalRefusedFirst(t *testing.T) {
	slowlabtest.Timing(t)
	for _, e := range lab.Experiments() {
		if !e.Takes("stack") {
			continue
		}
		code, _, stderr := runCmd(t, "reproduce", e.Name, "--stack", "external", "--print-scenario")
		own := "stack external: " + e.Name + " " + e.External // its registered refusal
		switch {
		case code != 2:
			t.Errorf("%s --stack external: exit %d, want 2", e.Name, code)
		case e.External != "" && stderr != "slowlab reproduce: "+own+"\n":
			t.Errorf("%s --stack external: %q, want its own refusal %q", e.Name, stderr, own)
		case e.External == "" && !strings.Contains(stderr, "no external: block"):
			t.Errorf("%s --stack external: %q, want it to ask for the external: block", e.Name, stderr)
		}
	}
}
